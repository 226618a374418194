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
// In a program without abseil's symbol (Node 20, ffmpeg, amixer) it does nothing. Node 22 exports the switch too
// and gets the call, but its V8 does not lock through abseil: no graph either way.
#define _GNU_SOURCE
#include <dlfcn.h>

static int switched_off;

__attribute__((constructor)) static void speaker_sys_node_preload(void) {
  // absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle), exported by node for addons
  void (*set_mode)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "_ZN4absl29SetMutexDeadlockDetectionModeENS_15OnDeadlockCycleE");
  if (set_mode) {
    set_mode(0); // absl::OnDeadlockCycle::kIgnore
    switched_off = 1;
  }
}

// 1 when the constructor found abseil's switch in this process and set it, 0 when there was none (for
// scripts/check-addons.mjs: on Node 24+ a 0 means a node whose abseil this library no longer finds).
__attribute__((visibility("default"))) int speaker_sys_node_preload_switched_off(void) { return switched_off; }
