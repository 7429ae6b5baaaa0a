#include "engine/self_test_steps.h"

#include "engine/step_gate.h"

namespace gemmd {

bool SelfTestSteps(const std::vector<int>& steps, const SelfTestActions& actions) {
  namespace protocol = step_gate_protocol;
  for (int step : steps) {
    actions.say(protocol::Start(step));
    std::string failure = actions.self_test(step);
    const bool healthy = actions.device_healthy();
    if (!failure.empty() && healthy) failure += "; diagnosis: " + actions.diagnose(step);
    actions.say(failure.empty() ? protocol::Pass(step) : protocol::Fail(step, failure));
    if (!healthy) return false;
  }
  return true;
}

}  // namespace gemmd
