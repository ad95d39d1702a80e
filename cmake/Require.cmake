# Finding gpudoc's dependencies, each named in cmake/debian-packages.txt (the list scripts/setup.sh
# installs from), so that a missing one is an error naming the Debian package that provides it, and
# so that the build cannot start to need a package the install does not know of:
#
#   gpudoc_find_package(NAME [ARGS...])         find_package(NAME ARGS...), required
#   gpudoc_find_pkg_config(PREFIX MODULE)       pkg_check_modules(PREFIX IMPORTED_TARGET GLOBAL MODULE),
#                                               required; the target is PkgConfig::PREFIX
#   gpudoc_find_program(VAR NAME)               find_program(VAR NAME) of the list's row cmd:NAME,
#                                               required (a generator the build runs)
#
# Each is an error at configure time when NAME (or MODULE) has no row in the list, and when a call
# from src/ or cmake/ (the gpudoc binary) names a package the list gives to the tests only.
# tools/check_dependencies.py (a test) keeps every other find_package, pkg_check_modules,
# find_library and find_path out of the build files.

set(GPUDOC_PACKAGE_LIST "${PROJECT_SOURCE_DIR}/cmake/debian-packages.txt")
set_property(DIRECTORY "${PROJECT_SOURCE_DIR}" APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${GPUDOC_PACKAGE_LIST}")

# _gpudoc_package_row(NAME OUT_PACKAGE OUT_ROLE): the list's row whose PROVIDES column is NAME.
function(_gpudoc_package_row name out_package out_role)
  file(STRINGS "${GPUDOC_PACKAGE_LIST}" lines REGEX "^[a-z]")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "[ \t]+" ";" fields "${line}")
    list(LENGTH fields n)
    if(n GREATER_EQUAL 3)
      list(GET fields 2 provides)
      if(provides STREQUAL name)
        list(GET fields 0 role)
        list(GET fields 1 package)
        set(${out_package} "${package}" PARENT_SCOPE)
        set(${out_role} "${role}" PARENT_SCOPE)
        return()
      endif()
    endif()
  endforeach()
  message(FATAL_ERROR "gpudoc: the build looks for '${name}' (${CMAKE_CURRENT_LIST_FILE}), which "
                      "cmake/debian-packages.txt does not list: add the Debian package that provides "
                      "it there, so that scripts/setup.sh installs it.")
endfunction()

# _gpudoc_package_for(NAME OUT_PACKAGE): the package, checked against the caller's part of the tree.
function(_gpudoc_package_for name out_package)
  _gpudoc_package_row("${name}" package role)
  string(FIND "${CMAKE_CURRENT_SOURCE_DIR}/" "${PROJECT_SOURCE_DIR}/tests/" at)
  if(NOT at EQUAL 0 AND NOT role MATCHES "^(build|gpudoc)$")
    message(FATAL_ERROR "gpudoc: ${CMAKE_CURRENT_LIST_FILE} needs '${name}' for the gpudoc binary, but "
                        "cmake/debian-packages.txt lists ${package} for the role '${role}': make it "
                        "'gpudoc', so that scripts/quickstart.sh installs it.")
  endif()
  set(${out_package} "${package}" PARENT_SCOPE)
endfunction()

function(_gpudoc_missing name package)
  message(FATAL_ERROR "gpudoc: ${name} was not found. It comes with the Debian package ${package}: "
                      "apt-get install ${package} (as root), or run scripts/setup.sh, which installs "
                      "everything cmake/debian-packages.txt lists.")
endfunction()

# A macro, so that the variables and targets find_package defines are the caller's.
macro(gpudoc_find_package _gpudoc_name)
  _gpudoc_package_for("${_gpudoc_name}" _gpudoc_package)
  find_package(${_gpudoc_name} ${ARGN} QUIET)
  if(NOT ${_gpudoc_name}_FOUND)
    _gpudoc_missing("${_gpudoc_name}" "${_gpudoc_package}")
  endif()
endmacro()

macro(gpudoc_find_pkg_config _gpudoc_prefix _gpudoc_module)
  _gpudoc_package_for("${_gpudoc_module}" _gpudoc_package)
  find_package(PkgConfig QUIET)
  if(NOT PKG_CONFIG_FOUND)
    _gpudoc_package_row(cmd:pkg-config _gpudoc_pc_package _gpudoc_pc_role)
    _gpudoc_missing("pkg-config" "${_gpudoc_pc_package}")
  endif()
  pkg_check_modules(${_gpudoc_prefix} QUIET IMPORTED_TARGET GLOBAL ${_gpudoc_module})
  if(NOT ${_gpudoc_prefix}_FOUND)
    _gpudoc_missing("${_gpudoc_module} (pkg-config)" "${_gpudoc_package}")
  endif()
endmacro()

macro(gpudoc_find_program _gpudoc_var _gpudoc_command)
  _gpudoc_package_for("cmd:${_gpudoc_command}" _gpudoc_package)
  find_program(${_gpudoc_var} ${_gpudoc_command})
  if(NOT ${_gpudoc_var})
    _gpudoc_missing("${_gpudoc_command}" "${_gpudoc_package}")
  endif()
endmacro()
