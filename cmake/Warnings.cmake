# Warnings live on an INTERFACE target that every gpudoc target links, not in global flags,
# so third-party headers and try-compiles are not affected.
add_library(gpudoc_warnings INTERFACE)
target_compile_options(gpudoc_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
    -Wold-style-cast -Wcast-align -Woverloaded-virtual -Wconversion -Wno-sign-conversion
    -Wimplicit-fallthrough>)
# g++ 12 at -O3 (the quick start's Release build, the portable binary) warns that std::string's
# inlined operator+ and assign may memcpy overlapping ranges (-Wrestrict) in code that only joins
# strings: a false positive of the compiler (GCC bug 105329). Off for g++ before 13 only.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  target_compile_options(gpudoc_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Wno-restrict>)
endif()
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
