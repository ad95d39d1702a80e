# Run at build time (cmake -P): the man pages of gpudoc from its own --help, with help2man.
#   cmake -DGPUDOC=BIN -DHELP2MAN=help2man -DGZIP=gzip -DVERSION=0.1.0 -DOUT=DIR -P ManPages.cmake
# Writes DIR/gpudoc.1.gz (the global options and the list of commands) and DIR/gpudoc-CMD.1.gz for
# each command listed under "Subcommands:" in `gpudoc --help`, each from `gpudoc CMD --help`, and
# DIR/pages.txt naming them. The dates are the commit's (SOURCE_DATE_EPOCH when set), so that the
# same source makes the same pages.
foreach(v GPUDOC HELP2MAN GZIP VERSION OUT)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "ManPages.cmake: -D${v}= is required")
  endif()
endforeach()

execute_process(COMMAND "${GPUDOC}" --help OUTPUT_VARIABLE help RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ManPages.cmake: ${GPUDOC} --help exited ${rc}")
endif()

# The commands: the entries of the "Subcommands:" section (two spaces, a name), with the first
# sentence of each one's description for its page's NAME line.
# (a ";" would split a CMake list: the text read here, names and first sentences, has "," instead)
string(REPLACE ";" "," help "${help}")
string(REPLACE "\n" ";" lines "${help}")
set(in_section FALSE)
set(commands "")
set(current "")
foreach(line IN LISTS lines)
  if(line MATCHES "^Subcommands:")
    set(in_section TRUE)
  elseif(in_section AND line MATCHES "^[^ ]")
    break()
  elseif(in_section AND line MATCHES "^  ([a-z][a-z0-9-]*)( +(.*))?$")
    set(current "${CMAKE_MATCH_1}")
    list(APPEND commands "${current}")
    set(what_${current} "${CMAKE_MATCH_3}")
  elseif(in_section AND current AND line MATCHES "^ +([^ ].*)$" AND NOT what_${current} MATCHES "[.:?]")
    string(APPEND what_${current} " ${CMAKE_MATCH_1}")
  endif()
endforeach()
if(NOT commands)
  message(FATAL_ERROR "ManPages.cmake: no \"Subcommands:\" section in `${GPUDOC} --help`")
endif()

if(NOT DEFINED ENV{SOURCE_DATE_EPOCH})
  execute_process(COMMAND git log -1 --format=%ct WORKING_DIRECTORY "${CMAKE_CURRENT_LIST_DIR}"
                  OUTPUT_VARIABLE epoch OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(epoch)
    set(ENV{SOURCE_DATE_EPOCH} "${epoch}")
  endif()
endif()

file(MAKE_DIRECTORY "${OUT}")
file(GLOB old "${OUT}/*.1" "${OUT}/*.1.gz")
if(old)
  file(REMOVE ${old})
endif()

# page(NAME SUMMARY HELP_OPTION INCLUDE): OUT/NAME.1.gz from `gpudoc HELP_OPTION`.
function(page name summary help_option include)
  set(raw "${OUT}/${name}.1")
  set(args --no-info --no-discard-stderr --version-string=${VERSION} "--name=${summary}"
           "--help-option=${help_option}" --output=${raw})
  if(include)
    list(APPEND args --include=${include})
  endif()
  execute_process(COMMAND "${HELP2MAN}" ${args} "${GPUDOC}" RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "ManPages.cmake: help2man for ${name} exited ${rc}: ${err}")
  endif()
  file(READ "${raw}" text)
  # help2man names every page after the program: a command's page is gpudoc-CMD.
  string(TOUPPER "${name}" title)
  string(REGEX REPLACE "\n\\.TH GPUDOC " "\n.TH ${title} " text "${text}")
  string(REGEX REPLACE "\n\\.SH NAME\ngpudoc \\\\- " "\n.SH NAME\n${name} \\\\- " text "${text}")
  file(WRITE "${raw}" "${text}")
  execute_process(COMMAND "${GZIP}" -9nf "${raw}" RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "ManPages.cmake: ${GZIP} ${raw} exited ${rc}")
  endif()
endfunction()

set(see_also "[SEE ALSO]\n")
set(pages "gpudoc.1.gz\n")
foreach(cmd IN LISTS commands)
  string(APPEND see_also ".BR gpudoc-${cmd} (1)\n")
  # The first sentence (a question keeps its mark), at most about 80 characters, without the
  # trailing colon or period.
  string(REGEX REPLACE "\\? .*$" "?" summary "${what_${cmd}} ")
  string(REGEX REPLACE "[.:] .*$" "" summary "${summary} ")
  string(REGEX REPLACE "[.: ]+$" "" summary "${summary}")
  # help2man's NAME line is ASCII (whatis, apropos): dashes as "-".
  string(REPLACE "—" "-" summary "${summary}")
  string(REPLACE "–" "-" summary "${summary}")
  string(LENGTH "${summary}" n)
  if(n GREATER 80)
    string(SUBSTRING "${summary}" 0 80 summary)
    string(REGEX REPLACE " [^ ]*$" "..." summary "${summary}")
  endif()
  page(gpudoc-${cmd} "${summary}" "${cmd} --help" "")
  string(APPEND pages "gpudoc-${cmd}.1.gz\n")
endforeach()
string(APPEND see_also "\nThe documentation: /usr/share/doc/gpudoc (README.md, serve.md and the other pages).\n")
file(WRITE "${OUT}/see-also.h2m" "${see_also}")
page(gpudoc "why your NVIDIA GPUs are not doing the work you paid for" "--help" "${OUT}/see-also.h2m")
file(WRITE "${OUT}/pages.txt" "${pages}")
