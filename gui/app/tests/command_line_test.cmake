# loupe-view's command line without a display: --help, bad arguments and unreadable traces
# end with a one-line error and a non-zero status before any window opens. Run by CTest as
#   cmake -DVIEW=... -DWORK=... -P command_line_test.cmake
file(MAKE_DIRECTORY "${WORK}")
set(garbage "${WORK}/not-a-trace.db")
file(WRITE "${garbage}" "this is not an sqlite file\n")

# expect(STATUS REGEX ARGS...): runs loupe-view ARGS, checks its exit status and that stdout
# and stderr together match REGEX (stderr in at most one line).
function(expect status regex)
  execute_process(COMMAND "${VIEW}" ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL status)
    message(FATAL_ERROR "loupe-view ${ARGN}: exit ${rc}, expected ${status}\n${out}${err}")
  endif()
  if(NOT "${out}${err}" MATCHES "${regex}")
    message(FATAL_ERROR "loupe-view ${ARGN}: output does not match '${regex}':\n${out}${err}")
  endif()
  string(REGEX MATCHALL "\n" newlines "${err}")
  list(LENGTH newlines lines)
  if(lines GREATER 1)
    message(FATAL_ERROR "loupe-view ${ARGN}: error is ${lines} lines, expected one:\n${err}")
  endif()
endfunction()

expect(0 "--screenshot OUT.png.*--select SPEC.*--panel TAB.*--diff A,B.*--size WxH.*--benchmark" --help)
expect(2 "--panel: 'nope' is not one of" t.db --screenshot out.png --panel nope)
expect(2 "--select: unknown key 'frame'" t.db --screenshot out.png --select frame=1)
expect(2 "--size: expected WIDTHxHEIGHT" t.db --screenshot out.png --size 1280)
expect(2 "--screenshot needs a trace" --screenshot out.png)
expect(2 "unknown option --bogus" --bogus)
expect(1 "${WORK}/missing.db" "${WORK}/missing.db" --screenshot "${WORK}/out.png")
expect(1 "not-a-trace.db" "${garbage}" --screenshot "${WORK}/out.png")
