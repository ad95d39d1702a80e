# Every third-party dependency is a Debian package found here; nothing is vendored.
find_package(Threads REQUIRED)
find_package(fmt REQUIRED)              # libfmt-dev
# fmt's compiled library (libfmt9 at run time) unless the binary must carry everything it needs: a
# header-only fmt compiles fmt's formatting code into every file that formats, ~35 % of the build.
add_library(gpudoc_fmt INTERFACE)
target_link_libraries(gpudoc_fmt INTERFACE $<IF:$<BOOL:${GPUDOC_PORTABLE}>,fmt::fmt-header-only,fmt::fmt>)
find_package(nlohmann_json 3.10 REQUIRED)  # nlohmann-json3-dev
find_package(CLI11 QUIET CONFIG)        # libcli11-dev
if(NOT CLI11_FOUND)
  find_path(CLI11_INCLUDE_DIR CLI/CLI.hpp REQUIRED)
  add_library(CLI11::CLI11 INTERFACE IMPORTED)
  target_include_directories(CLI11::CLI11 INTERFACE ${CLI11_INCLUDE_DIR})
endif()
if(GPUDOC_PORTABLE)
  # Static libstdc++/libgcc so the binary runs where the system's are older or newer.
  add_link_options(-static-libstdc++ -static-libgcc)
endif()

# CUDA is optional. AUTO builds it when nvcc is found.
set(GPUDOC_HAVE_CUDA OFF)
if(NOT GPUDOC_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(GPUDOC_HAVE_CUDA ON)
  elseif(GPUDOC_CUDA STREQUAL "ON")
    message(FATAL_ERROR "GPUDOC_CUDA=ON but no CUDA compiler was found (is nvcc on the PATH?)")
  endif()
endif()
message(STATUS "gpudoc: CUDA benchmarks ${GPUDOC_HAVE_CUDA}")

# SQLite (libsqlite3-dev) for the baseline store. The portable build links the static archive the
# same package ships, so the binary carries its own SQLite.
find_package(SQLite3 REQUIRED)
if(GPUDOC_PORTABLE)
  find_library(GPUDOC_SQLITE3_STATIC NAMES libsqlite3.a REQUIRED)
  add_library(gpudoc_sqlite3 INTERFACE)
  target_include_directories(gpudoc_sqlite3 INTERFACE ${SQLite3_INCLUDE_DIRS})
  target_link_libraries(gpudoc_sqlite3 INTERFACE ${GPUDOC_SQLITE3_STATIC} Threads::Threads ${CMAKE_DL_LIBS} m)
else()
  add_library(gpudoc_sqlite3 INTERFACE)
  target_link_libraries(gpudoc_sqlite3 INTERFACE SQLite::SQLite3)
endif()
