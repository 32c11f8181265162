# One screenshot test of loupe-view: makes a trace with `loupe run`, renders a state under
# Xvfb with --screenshot and checks the picture. Run by CTest as
#   cmake -DCASE=graph -DLOUPE=... -DVIEW=... -DCHECK=... -DXVFB_RUN=... -DSAMPLE=... -DWORK=...
#         [-DVIEW_PRELOAD=swrast_dri.so] -P screenshot_test.cmake
#
# Each case: the batch sizes traced (one compile each, in one trace), the viewer's state and
# the colours its picture must show (see screenshot_check.cpp).
if(CASE STREQUAL "graph")
  # A node selected in the final graph: highlighted on the canvas, fused groups outlined,
  # the bottom panel drawn.
  set(batches 8)
  set(view_args --select compile=1,pass=memory-planning,node=h --panel memory)
  set(expect selection@top:300 selection-border@top:40 fused-group@top:500 box@top:500 bottom-panel@bottom:20000)
elseif(CASE STREQUAL "kernels")
  # The kernels panel shows generated source with syntax colouring.
  set(batches 8)
  set(view_args --select compile=1 --panel kernels)
  set(expect code-keyword@bottom-right:100 code-type@bottom-right:100 bottom-panel@bottom:20000)
elseif(CASE STREQUAL "pass-step")
  # Stepping to decomposition highlights the nodes it added.
  set(batches 8)
  set(view_args --select compile=1,pass=decomposition)
  set(expect added@top:300)
elseif(CASE STREQUAL "diff")
  # Two compiles side by side, the selected node linked to its match on the other side.
  set(batches 8 16)
  set(view_args --diff 1,2 --select node=h)
  set(expect box@left:500 box@right:500 selection@left:200 selection@right:200 diff-link@top:20)
else()
  message(FATAL_ERROR "unknown CASE '${CASE}'")
endif()

file(MAKE_DIRECTORY "${WORK}")
set(trace "${WORK}/${CASE}.db")
set(picture "${WORK}/${CASE}.png")
file(REMOVE "${trace}" "${trace}-wal" "${trace}-shm" "${picture}")
foreach(batch IN LISTS batches)
  execute_process(COMMAND "${LOUPE}" run "${SAMPLE}" --symbol s0=${batch} --check --trace "${trace}"
                  OUTPUT_QUIET RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "loupe run ${SAMPLE} at s0=${batch} failed (${status})")
  endif()
endforeach()

# Sanitizer builds preload Mesa's driver into the viewer alone (gui/app/CMakeLists.txt says why).
set(view_env)
if(VIEW_PRELOAD)
  set(view_env "${CMAKE_COMMAND}" -E env "LD_PRELOAD=${VIEW_PRELOAD}"
               "ASAN_OPTIONS=$ENV{ASAN_OPTIONS}:verify_asan_link_order=0")
endif()
execute_process(COMMAND "${XVFB_RUN}" -a -s "-screen 0 1280x800x24"
                        ${view_env} "${VIEW}" "${trace}" --screenshot "${picture}" ${view_args}
                RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "loupe-view --screenshot failed (${status})")
endif()

set(check_args)
foreach(e IN LISTS expect)
  list(APPEND check_args --expect ${e})
endforeach()
execute_process(COMMAND "${CHECK}" "${picture}" ${check_args} RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${picture} does not show what case ${CASE} expects")
endif()
