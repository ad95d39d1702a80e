# Warnings live on an INTERFACE target that every gpudoc target links, not in global flags,
# so third-party headers and try-compiles are not affected.
add_library(gpudoc_warnings INTERFACE)
target_compile_options(gpudoc_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
    -Wold-style-cast -Wcast-align -Woverloaded-virtual -Wconversion -Wno-sign-conversion
    -Wimplicit-fallthrough>)
if(GPUDOC_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()
