# Every third-party dependency is a Debian package (cmake/debian-packages.txt), found through
# cmake/Require.cmake's gpudoc_find_* so that a missing one names its package; nothing is vendored.
include(cmake/Require.cmake)
find_package(Threads REQUIRED)          # the C library's: no package of its own
gpudoc_find_package(fmt)
# fmt's compiled library (libfmt9 at run time) unless the binary must carry everything it needs: a
# header-only fmt compiles fmt's formatting code into every file that formats, ~35 % of the build.
add_library(gpudoc_fmt INTERFACE)
target_link_libraries(gpudoc_fmt INTERFACE $<IF:$<BOOL:${GPUDOC_PORTABLE}>,fmt::fmt-header-only,fmt::fmt>)
gpudoc_find_package(nlohmann_json 3.10)
gpudoc_find_package(CLI11 CONFIG)
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
    find_package(CUDAToolkit REQUIRED)  # the toolkit nvcc came with, not a Debian package
    set(GPUDOC_HAVE_CUDA ON)
  elseif(GPUDOC_CUDA STREQUAL "ON")
    message(FATAL_ERROR "GPUDOC_CUDA=ON but no CUDA compiler was found (is nvcc on the PATH?)")
  endif()
endif()
message(STATUS "gpudoc: CUDA benchmarks ${GPUDOC_HAVE_CUDA}")

# SQLite for the baseline store. The portable build links the static archive the same package ships,
# so the binary carries its own SQLite.
gpudoc_find_package(SQLite3)
if(GPUDOC_PORTABLE)
  cmake_path(GET SQLite3_LIBRARY PARENT_PATH sqlite_lib_dir)
  set(GPUDOC_SQLITE3_STATIC "${sqlite_lib_dir}/libsqlite3.a")
  if(NOT EXISTS "${GPUDOC_SQLITE3_STATIC}")
    message(FATAL_ERROR "gpudoc: the portable build links ${GPUDOC_SQLITE3_STATIC}, which libsqlite3-dev ships; it is missing")
  endif()
  add_library(gpudoc_sqlite3 INTERFACE)
  target_include_directories(gpudoc_sqlite3 INTERFACE ${SQLite3_INCLUDE_DIRS})
  target_link_libraries(gpudoc_sqlite3 INTERFACE ${GPUDOC_SQLITE3_STATIC} Threads::Threads ${CMAKE_DL_LIBS} m)
else()
  add_library(gpudoc_sqlite3 INTERFACE)
  target_link_libraries(gpudoc_sqlite3 INTERFACE SQLite::SQLite3)
endif()

# gRPC and protobuf for gpudoc serve's kubelet pod-resources client (cmake/Grpc.cmake).
include(cmake/Grpc.cmake)

# gpudoc serve's web configuration (src/serve/web_config.cpp, tls.cpp, basic_auth.cpp): yaml-cpp for
# the file, OpenSSL for TLS, libxcrypt's crypt_rn for bcrypt. The portable build links the static
# archives the same packages ship, so its binary still needs only the C library (and carries
# OpenSSL 3.0: rebuild it for OpenSSL's security updates; the .deb's gpudoc uses the system's).
if(GPUDOC_PORTABLE)
  set(OPENSSL_USE_STATIC_LIBS TRUE)
endif()
gpudoc_find_package(OpenSSL 3)
gpudoc_find_pkg_config(GPUDOC_YAMLCPP yaml-cpp)
gpudoc_find_pkg_config(GPUDOC_LIBCRYPT libcrypt)
add_library(gpudoc_web_deps INTERFACE)
if(GPUDOC_PORTABLE)
  foreach(archive IN ITEMS "${GPUDOC_YAMLCPP_LIBDIR}/libyaml-cpp.a" "${GPUDOC_LIBCRYPT_LIBDIR}/libcrypt.a")
    if(NOT EXISTS "${archive}")
      message(FATAL_ERROR "gpudoc: the portable build links ${archive}, which its -dev package ships; it is missing")
    endif()
  endforeach()
  target_include_directories(gpudoc_web_deps INTERFACE ${GPUDOC_YAMLCPP_INCLUDE_DIRS})
  target_link_libraries(gpudoc_web_deps INTERFACE "${GPUDOC_YAMLCPP_LIBDIR}/libyaml-cpp.a"
                        "${GPUDOC_LIBCRYPT_LIBDIR}/libcrypt.a" OpenSSL::SSL OpenSSL::Crypto)
else()
  target_link_libraries(gpudoc_web_deps INTERFACE PkgConfig::GPUDOC_YAMLCPP PkgConfig::GPUDOC_LIBCRYPT OpenSSL::SSL
                        OpenSSL::Crypto)
endif()
