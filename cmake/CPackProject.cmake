# Read by cpack before it makes a package (CPACK_PROJECT_CONFIG_FILE, cmake/Packaging.cmake): the
# .deb is refused without a real Maintainer, the man pages or the Python client's wheel, with what to do.
if(CPACK_GENERATOR STREQUAL "DEB")
  if(NOT CPACK_DEBIAN_PACKAGE_MAINTAINER MATCHES "^[^<>@]*[^<>@ ] <[^<>@ ]+@[^<>@ ]+>$")
    message(FATAL_ERROR
      "gpudoc: the .deb needs its Maintainer, \"Name <address>\" (got '${CPACK_DEBIAN_PACKAGE_MAINTAINER}'): "
      "configure with -DGPUDOC_PACKAGE_MAINTAINER=\"Your Name <you@example.org>\", or run "
      "cpack -D CPACK_DEBIAN_PACKAGE_MAINTAINER=\"Your Name <you@example.org>\"")
  endif()
  if(NOT EXISTS "${CPACK_GPUDOC_MAN_PAGES}")
    message(FATAL_ERROR "gpudoc: the man pages are not built (${CPACK_GPUDOC_MAN_PAGES}): apt-get install help2man, "
                        "configure again and build (cmake/Packaging.cmake)")
  endif()
  if(NOT EXISTS "${CPACK_GPUDOC_WHEEL}")
    message(FATAL_ERROR "gpudoc: the Python client's wheel is not built (${CPACK_GPUDOC_WHEEL}): apt-get install "
                        "python3-setuptools python3-wheel, configure again and build (cmake/Packaging.cmake)")
  endif()
endif()
