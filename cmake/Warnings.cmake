# Warnings live on an INTERFACE target that every gpudoc target links, not in global flags,
# so third-party headers and try-compiles are not affected.
add_library(gpudoc_warnings INTERFACE)
target_compile_options(gpudoc_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
    -Wold-style-cast -Wcast-align -Woverloaded-virtual -Wconversion -Wno-sign-conversion
    -Wimplicit-fallthrough>)
# GPUDOC_WERROR (scripts/test.sh, hence CI): gcc's and clang's warnings fail the build, and so do the
# host compiler's warnings in .cu files. nvcc's own diagnostics (deprecated architectures, its
# front end's remarks) stay warnings: they depend on the toolkit installed, not on gpudoc's code.
if(GPUDOC_WERROR)
  target_compile_options(gpudoc_warnings INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-Werror>
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Werror>)
endif()
if(GPUDOC_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()
