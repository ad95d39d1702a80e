# gpudoc_bytes(VAR FILE): FILE's bytes as a C array initialiser ('\x3c','\x21',...) in VAR and their
# count in VAR_size. Bytes, not a string literal: no delimiter can clash with the file's content.
# Included by the build-time embedding scripts (embed_web_assets.cmake, embed_files.cmake).
function(gpudoc_bytes var file)
  file(READ "${file}" hex HEX)
  string(LENGTH "${hex}" n)
  math(EXPR bytes "${n} / 2")
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "'\\\\x\\1'," body "${hex}")
  # Break the single huge line every 32 bytes to keep the generated file editor-friendly.
  string(REGEX REPLACE "(('[^']+',){32})" "\\1\n" body "${body}")
  set(${var} "${body}" PARENT_SCOPE)
  set(${var}_size ${bytes} PARENT_SCOPE)
endfunction()
