#include "tools/loupe/compile_record.h"

#include "driver/compile_graph.h"
#include "inspector/recorder/run_info.h"
#include "inspector/recorder/trace_recorder.h"

namespace loupe::cli {

int64_t recordGraphCompile(TraceWriter& writer, const std::string& command, const std::string& file,
                           const Graph& graph, const std::vector<std::string>& pipeline,
                           const PipelineOptions& pipelineOptions) {
  int64_t runId = writer.beginRun(thisProcessRun(command));
  CompileInfo compile;
  compile.frame_name = graph.name();
  compile.frame_file = file;
  int64_t compileId = writer.beginCompile(runId, compile);
  TraceRecorder recorder(writer, compileId);
  CompileOptions compileOptions;
  compileOptions.pipeline = pipeline;
  compileOptions.pipelineOptions = pipelineOptions;
  compileOptions.instrumentation.push_back(&recorder);
  recorder.finishCompile(compileGraph(graph.clone(), compileOptions), "error");
  return compileId;
}

} // namespace loupe::cli
