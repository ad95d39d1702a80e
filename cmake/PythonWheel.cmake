# Run at build time (cmake -P): the Python client (python/) as a wheel, built offline.
#   cmake -DPYTHON=python3 -DSOURCE=python -DWORK=DIR -DOUT=DIR -P PythonWheel.cmake
# setuptools' own build backend (PEP 517) on a copy of SOURCE in WORK, so that nothing is written
# into the source tree and no build frontend, network or isolated environment is needed: Debian's
# python3-setuptools and python3-wheel are enough. OUT then holds the one wheel,
# gpudoc-VERSION-py3-none-any.whl, dated with the commit (SOURCE_DATE_EPOCH) for the same bytes
# from the same source.
foreach(v PYTHON SOURCE WORK OUT)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "PythonWheel.cmake: -D${v}= is required")
  endif()
endforeach()
if(NOT DEFINED ENV{SOURCE_DATE_EPOCH})
  execute_process(COMMAND git log -1 --format=%ct WORKING_DIRECTORY "${SOURCE}"
                  OUTPUT_VARIABLE epoch OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(epoch)
    set(ENV{SOURCE_DATE_EPOCH} "${epoch}")
  endif()
endif()
file(REMOVE_RECURSE "${WORK}")
file(COPY "${SOURCE}/" DESTINATION "${WORK}/src" PATTERN "__pycache__" EXCLUDE PATTERN "*.egg-info" EXCLUDE
     PATTERN "build" EXCLUDE)
file(GLOB old "${OUT}/*.whl")
if(old)
  file(REMOVE ${old})
endif()
file(MAKE_DIRECTORY "${OUT}")
execute_process(
  COMMAND "${PYTHON}" -c "import sys, setuptools.build_meta as backend; print(backend.build_wheel(sys.argv[1]))" "${OUT}"
  WORKING_DIRECTORY "${WORK}/src" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "PythonWheel.cmake: building the wheel of ${SOURCE} failed (${rc}):\n${err}")
endif()
file(GLOB wheels "${OUT}/*.whl")
list(LENGTH wheels n)
if(NOT n EQUAL 1)
  message(FATAL_ERROR "PythonWheel.cmake: expected one wheel in ${OUT}, got: ${wheels}")
endif()
file(REMOVE_RECURSE "${WORK}")
