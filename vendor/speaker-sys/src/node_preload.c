// Preloaded into node by the systemd units (LD_PRELOAD, systemd/speaker-agent*.service); runs before node's main.
//
// What it fixes: Node 24 and later take V8's locks through abseil's absl::Mutex, and node's release builds compile
// abseil without NDEBUG, so abseil's debug-only deadlock detection is on. Node turns it off itself
// (nodejs/node#57582, absl::SetMutexDeadlockDetectionMode(kIgnore) in InitializeOncePerProcessInternal), but only
// after its first lock (v8::base::RandomNumberGenerator::SetEntropySource, a few lines earlier), and that first
// lock builds abseil's process-wide lock-order graph: a hash table of 262,139 int32 set to -1, 1 MB written at once
// and never used again (seen with gdb on Node 26.10 and 26.12; issue #18). Switched off here, before main, the graph
// is never built. Same call, same mode as node's own, just earlier: abseil's switch is a constant-initialised
// atomic, so setting it before node's static constructors is safe.
//
// On a node without abseil's symbol (Node 20 and 22, other programs the service starts) it does nothing.
#define _GNU_SOURCE
#include <dlfcn.h>

__attribute__((constructor)) static void speaker_sys_node_preload(void) {
  // absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle), exported by node for addons
  void (*set_mode)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "_ZN4absl29SetMutexDeadlockDetectionModeENS_15OnDeadlockCycleE");
  if (set_mode) set_mode(0); // absl::OnDeadlockCycle::kIgnore
}
