# What `cmake --install build --prefix P` puts where, and the Debian package made from the same rules.
#   P/bin/gpudoc                   the binary (src/cli/CMakeLists.txt)
#   P/share/gpudoc/traces/*.jsonl  the real H200 traces `gpudoc doctor` replays without a GPU (src/cli)
#   P/share/doc/gpudoc/            the README and the documentation below
# The binary finds the traces relative to its own location, so P can be moved after installing.
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES docs/architecture.md docs/ci.md docs/findings.md docs/methodology.md docs/trace-format.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})

# `cpack -G DEB` in the build folder: gpudoc_<version>_<arch>.deb installing /usr/bin/gpudoc,
# /usr/share/gpudoc and /usr/share/doc/gpudoc. Depends is computed from the binary's shared
# libraries with dpkg-shlibdeps (dpkg-dev, and `file`: scripts/setup.sh installs both). NVML, CUDA's
# libraries and NCCL are loaded at run time where present, so they are not dependencies.
set(CPACK_PACKAGE_NAME gpudoc)
set(CPACK_PACKAGE_VENDOR "gpudoc")
# Debian requires a Maintainer; whoever publishes the package sets theirs.
set(GPUDOC_PACKAGE_MAINTAINER "gpudoc maintainers <maintainers@gpudoc.invalid>" CACHE STRING
    "The Maintainer field of the .deb")
set(CPACK_PACKAGE_CONTACT "${GPUDOC_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "GPU performance doctor: telemetry, diagnosis, benchmarks, CI baselines, health")
string(CONCAT CPACK_PACKAGE_DESCRIPTION
    "gpudoc reads every NVIDIA GPU at its sensors' native rates through NVML (loaded at run time), names\n"
    "what holds a job back (input starvation, launch-bound kernels, stragglers, contention, memory\n"
    "growth, throttling), measures the hardware against its ceilings, keeps golden baselines for a CI\n"
    "regression gate and checks node health. Without a GPU, `gpudoc doctor` replays real H200 traces.")
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# The framework probe (`gpudoc baseline --probe`) runs python3 with torch; everything else needs neither.
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "python3")
set(CPACK_STRIP_FILES ON)
include(CPack)
