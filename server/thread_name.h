// Names the calling thread, as `top -H`, /proc/PID/task/*/comm and a
// debugger show it: an operator (and scripts/gpu/run.sh) can then tell the
// device workers' CPU from the reply senders', the copy threads' and gRPC's
// own. Linux keeps 15 bytes of a name; longer ones are cut there.
#pragma once

#include <pthread.h>

#include <string>

namespace gemmd {

inline void NameThisThread(std::string name) {
  if (name.size() > 15) name.resize(15);
  pthread_setname_np(pthread_self(), name.c_str());
}

}  // namespace gemmd
