# What `cmake --install build --prefix P` puts where, and the Debian package made from the same rules.
#   P/bin/gpudoc                          the binary (src/cli/CMakeLists.txt)
#   P/lib/gpudoc/*.so                     the libraries gpudoc slice and profile inject (src/slice, src/profile)
#   P/share/gpudoc/traces/*.jsonl         the real H200 traces `gpudoc doctor` replays without a GPU (src/telemetry)
#   P/share/gpudoc/deploy/                deploy/: systemd, Slurm, Kubernetes, Prometheus, Grafana, the image recipe
#   P/lib/systemd/system/                 gpudoc-serve.service, gpudoc-health.service and .timer (the .deb:
#                                         /lib/systemd/system)
#   P/share/doc/gpudoc/                   the README, docs/*.md (serve.md: the units' Documentation=), copyright
#   P/share/man/man1/gpudoc*.1.gz         gpudoc(1) and gpudoc-COMMAND(1), made from --help by help2man
#   P/share/bash-completion/completions/gpudoc   commands and options, read from gpudoc's own --help
#   P/share/gpudoc/python/gpudoc-*.whl    the Python client, installable with no network
# The binary finds the traces relative to its own location, so P can be moved after installing.
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
file(GLOB gpudoc_docs CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/docs/*.md")
install(FILES ${gpudoc_docs} DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES cmake/debian/copyright DESTINATION ${CMAKE_INSTALL_DOCDIR})
# Why lintian's embedded-library tag on the portable binary is expected (the comment inside).
install(FILES cmake/debian/lintian-overrides DESTINATION ${CMAKE_INSTALL_DATADIR}/lintian/overrides RENAME gpudoc)
install(DIRECTORY deploy/ DESTINATION ${CMAKE_INSTALL_DATADIR}/gpudoc/deploy USE_SOURCE_PERMISSIONS)
install(FILES deploy/systemd/gpudoc-serve.service deploy/systemd/gpudoc-health.service
              deploy/systemd/gpudoc-health.timer
        DESTINATION lib/systemd/system)
install(FILES scripts/completion/gpudoc.bash DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
        RENAME gpudoc)

# The man pages: help2man (Debian package help2man) on the built gpudoc's --help, each time the
# binary is relinked. Without help2man, `cmake --install` has no man pages and cpack refuses.
find_program(GPUDOC_HELP2MAN help2man)
find_program(GPUDOC_GZIP gzip)
set(gpudoc_man_dir "${PROJECT_BINARY_DIR}/man")
if(GPUDOC_HELP2MAN AND GPUDOC_GZIP)
  add_custom_command(
    OUTPUT "${gpudoc_man_dir}/pages.txt"
    COMMAND "${CMAKE_COMMAND}" -DGPUDOC=$<TARGET_FILE:gpudoc> -DHELP2MAN=${GPUDOC_HELP2MAN} -DGZIP=${GPUDOC_GZIP}
            -DVERSION=${PROJECT_VERSION} -DOUT=${gpudoc_man_dir} -P "${PROJECT_SOURCE_DIR}/cmake/ManPages.cmake"
    DEPENDS gpudoc "${PROJECT_SOURCE_DIR}/cmake/ManPages.cmake"
    COMMENT "man pages of gpudoc (help2man)"
    VERBATIM)
  add_custom_target(gpudoc_man ALL DEPENDS "${gpudoc_man_dir}/pages.txt")
  install(DIRECTORY "${gpudoc_man_dir}/" DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 FILES_MATCHING PATTERN "*.1.gz")
else()
  message(STATUS "gpudoc: no help2man, so no man pages (apt-get install help2man); cpack will refuse")
endif()

# The Python client (python/) as a wheel, for `pip install` with no network and no build step
# (python/README.md): setuptools' build backend with Debian's python3-setuptools and python3-wheel
# (cmake/PythonWheel.cmake), into P/share/gpudoc/python/. Without them, no wheel and cpack refuses.
set(gpudoc_python_dir "${PROJECT_BINARY_DIR}/python")
set(GPUDOC_WHEEL_PYTHON "" CACHE FILEPATH "a python3 with setuptools and wheel, to build the Python client's wheel")
if(NOT GPUDOC_WHEEL_PYTHON)
  find_program(gpudoc_python3 python3)
  foreach(candidate /usr/bin/python3 "${gpudoc_python3}")
    if(candidate AND EXISTS "${candidate}")
      execute_process(COMMAND "${candidate}" -c "import setuptools.build_meta, wheel" RESULT_VARIABLE missing
                      OUTPUT_QUIET ERROR_QUIET)
      if(missing EQUAL 0)
        set(GPUDOC_WHEEL_PYTHON "${candidate}")
        break()
      endif()
    endif()
  endforeach()
endif()
if(GPUDOC_WHEEL_PYTHON)
  file(GLOB gpudoc_python_sources CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/python/gpudoc/*.py")
  set(gpudoc_wheel "${gpudoc_python_dir}/gpudoc-${PROJECT_VERSION}-py3-none-any.whl")
  add_custom_command(
    OUTPUT "${gpudoc_wheel}"
    COMMAND "${CMAKE_COMMAND}" -DPYTHON=${GPUDOC_WHEEL_PYTHON} -DSOURCE=${PROJECT_SOURCE_DIR}/python
            -DWORK=${PROJECT_BINARY_DIR}/python-wheel-build -DOUT=${gpudoc_python_dir}
            -P "${PROJECT_SOURCE_DIR}/cmake/PythonWheel.cmake"
    DEPENDS ${gpudoc_python_sources} "${PROJECT_SOURCE_DIR}/python/pyproject.toml"
            "${PROJECT_SOURCE_DIR}/python/README.md" "${PROJECT_SOURCE_DIR}/cmake/PythonWheel.cmake"
    COMMENT "the Python client's wheel (setuptools, offline)"
    VERBATIM)
  add_custom_target(gpudoc_python_wheel ALL DEPENDS "${gpudoc_wheel}")
  install(FILES "${gpudoc_wheel}" DESTINATION ${CMAKE_INSTALL_DATADIR}/gpudoc/python)
  set(CPACK_GPUDOC_WHEEL "${gpudoc_wheel}")
else()
  message(STATUS "gpudoc: no python3 with setuptools and wheel, so no wheel of the Python client "
                 "(apt-get install python3-setuptools python3-wheel); cpack will refuse")
  set(CPACK_GPUDOC_WHEEL "${gpudoc_python_dir}/gpudoc-${PROJECT_VERSION}-py3-none-any.whl")
endif()

# `cpack -G DEB` in the build folder: gpudoc_<version>-1_<arch>.deb with the files above, the
# systemd units in /lib/systemd/system (not enabled: `systemctl enable --now gpudoc-serve
# gpudoc-health.timer`) and /usr/share/doc/gpudoc/changelog.Debian.gz. Depends is computed from
# the binary's shared libraries with dpkg-shlibdeps (dpkg-dev, and `file`: scripts/setup.sh
# installs both). NVML, CUDA's libraries and NCCL are loaded at run time where present, so they are
# not dependencies. cmake/CPackProject.cmake refuses to make it without a real Maintainer, the
# man pages and the wheel; cmake/DebPreBuild.cmake moves the units and writes the changelog.
set(CPACK_PACKAGE_NAME gpudoc)
set(CPACK_PACKAGE_VENDOR "gpudoc")
# Debian requires a Maintainer, and nobody is named by the source tree: whoever publishes the
# package gives theirs, -DGPUDOC_PACKAGE_MAINTAINER="Name <address>" at configure time (or
# `cpack -D CPACK_DEBIAN_PACKAGE_MAINTAINER=...`); cpack refuses without it.
set(GPUDOC_PACKAGE_MAINTAINER "" CACHE STRING "The Maintainer field of the .deb: \"Name <address>\" (required by cpack)")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${GPUDOC_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_CONTACT "${GPUDOC_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "GPU performance doctor: telemetry, diagnosis, benchmarks, CI baselines, health")
string(CONCAT CPACK_PACKAGE_DESCRIPTION
    "gpudoc reads every NVIDIA GPU at its sensors' native rates through NVML\n"
    "(loaded at run time), names what holds a job back (input starvation,\n"
    "launch-bound kernels, stragglers, contention, memory growth, throttling),\n"
    "measures the hardware against its ceilings, keeps golden baselines for a\n"
    "CI regression gate and checks node health. Without a GPU, `gpudoc doctor`\n"
    "replays real H200 traces. `gpudoc serve` is a Prometheus exporter with a\n"
    "live dashboard; systemd units, a Slurm prolog and epilog, Kubernetes\n"
    "manifests, alerting rules and a Grafana dashboard are in\n"
    "/usr/share/gpudoc/deploy.")
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
# A Debian revision: the changelog is then changelog.Debian.gz, as for any package of an upstream release.
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# The framework probe (`gpudoc baseline --probe`) runs python3 with torch; everything else needs neither.
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "python3")
set(CPACK_STRIP_FILES ON)
# The maintainer scripts: the units registered with systemd (not enabled), a running serve or
# health timer restarted on an upgrade and stopped on removal. Given here, they also keep CPack
# from adding an ldconfig call for the private libraries in /usr/lib/gpudoc, which need none.
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA "${PROJECT_SOURCE_DIR}/cmake/debian/postinst"
    "${PROJECT_SOURCE_DIR}/cmake/debian/prerm" "${PROJECT_SOURCE_DIR}/cmake/debian/postrm")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_PROJECT_CONFIG_FILE "${PROJECT_SOURCE_DIR}/cmake/CPackProject.cmake")
set(CPACK_PRE_BUILD_SCRIPTS "${PROJECT_SOURCE_DIR}/cmake/DebPreBuild.cmake")
set(CPACK_GPUDOC_MAN_PAGES "${gpudoc_man_dir}/pages.txt")
set(CPACK_GPUDOC_SOURCE_DIR "${PROJECT_SOURCE_DIR}")
include(CPack)
