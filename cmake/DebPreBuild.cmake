# Run by cpack after it installed the files into its staging folder and before it makes the .deb
# (CPACK_PRE_BUILD_SCRIPTS, cmake/Packaging.cmake):
#   - the systemd units move from usr/lib/systemd/system to lib/systemd/system, where Debian 12's
#     packages keep them;
#   - usr/share/doc/gpudoc/changelog.Debian.gz: one entry for this version, signed by the Maintainer
#     and dated with the commit the package is built from (reproducible), gzip -9n.
if(NOT CPACK_GENERATOR STREQUAL "DEB")
  return()
endif()
set(root "${CPACK_TEMPORARY_INSTALL_DIRECTORY}")
if(NOT IS_DIRECTORY "${root}/usr")
  message(FATAL_ERROR "DebPreBuild.cmake: no usr/ in the staging folder ${root}")
endif()
if(IS_DIRECTORY "${root}/usr/lib/systemd/system")
  file(MAKE_DIRECTORY "${root}/lib/systemd")
  file(RENAME "${root}/usr/lib/systemd/system" "${root}/lib/systemd/system")
  file(REMOVE_RECURSE "${root}/usr/lib/systemd")
endif()

execute_process(COMMAND git log -1 --format=%cD WORKING_DIRECTORY "${CPACK_GPUDOC_SOURCE_DIR}"
                OUTPUT_VARIABLE date OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY "${CPACK_GPUDOC_SOURCE_DIR}"
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT date)
  string(TIMESTAMP date "%a, %d %b %Y %H:%M:%S +0000" UTC)
endif()
set(from "the gpudoc source tree")
if(commit)
  set(from "commit ${commit} of the gpudoc source tree")
endif()
set(version "${CPACK_PACKAGE_VERSION}-${CPACK_DEBIAN_PACKAGE_RELEASE}")
set(doc "${root}/usr/share/doc/gpudoc")
file(WRITE "${doc}/changelog.Debian"
  "gpudoc (${version}) unstable; urgency=medium\n\n"
  "  * gpudoc ${CPACK_PACKAGE_VERSION}, packaged with CPack from\n"
  "    ${from}.\n\n"
  " -- ${CPACK_DEBIAN_PACKAGE_MAINTAINER}  ${date}\n")
execute_process(COMMAND gzip -9nf "${doc}/changelog.Debian" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "DebPreBuild.cmake: gzip -9n changelog.Debian exited ${rc}")
endif()
