// A decision's description, built only when an instrumentation will read it. Formatting a
// description for every rewrite of every compile costs time that only traces, --print-decisions
// and the bisector repay, so, as LLVM's DebugCounter costs nothing when no counter is set,
// PassContext::decide calls the builder only when PassInstrumentation::wantsDecisionText says so.
#pragma once

#include <memory>
#include <string>
#include <type_traits>

namespace loupe {

// A non-owning reference to a callable that returns the text, e.g.
// `[&] { return describeCall(node) + " is unused"; }`: valid for the decide() call it is
// passed to, which is all it is needed for.
class DecisionText {
public:
  template <typename Build>
  requires std::is_invocable_r_v<std::string, Build&> &&
      (!std::is_same_v<std::remove_cvref_t<Build>, DecisionText>)
          DecisionText(Build&& build) // NOLINT(google-explicit-constructor): a lambda at every call
      : build_(const_cast<void*>(static_cast<const void*>(std::addressof(build)))),
        call_([](void* b) -> std::string {
          return (*static_cast<std::add_pointer_t<std::remove_reference_t<Build>>>(b))();
        }) {}

  std::string operator()() const { return call_(build_); }

private:
  void* build_;
  std::string (*call_)(void*);
};

} // namespace loupe
