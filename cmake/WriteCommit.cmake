# Run at build time (cmake -P), not at configure time: writes OUT from IN with the commit the source
# tree is at now, "-dirty" when tracked files differ from it, "unknown" outside a git checkout.
# configure_file rewrites OUT only when its text changes, so only what includes it is rebuilt.
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY ${SOURCE_DIR}
                OUTPUT_VARIABLE GPUDOC_GIT_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT GPUDOC_GIT_COMMIT)
  set(GPUDOC_GIT_COMMIT "unknown")
else()
  execute_process(COMMAND git status --porcelain --untracked-files=no WORKING_DIRECTORY ${SOURCE_DIR}
                  OUTPUT_VARIABLE changes OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(changes)
    string(APPEND GPUDOC_GIT_COMMIT "-dirty")
  endif()
endif()
configure_file(${IN} ${OUT} @ONLY)
