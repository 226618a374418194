// speaker-agent addition (PATCHES.md item 11): one lock around every PortAudio API call of this addon.
//
// Why: PortAudio is not thread-safe, and FrameIO closes streams on a libuv pool thread (Pa_AbortStream,
// Pa_CloseStream, Pa_Terminate can block on a dead device) while the event loop may be listing devices or opening
// the replacement stream. A reopen right after a stall (the agent reopens a stalled speaker at once) crashed in
// getDevices while the old stream's Pa_Terminate unloaded ALSA plugins. Audio callbacks never take the lock.
// Recursive: an open that fails half-way closes what it opened while still holding it.
#pragma once
#include <mutex>

namespace streampunk {
inline std::recursive_mutex& paLock() {
  static std::recursive_mutex m;
  return m;
}
}  // namespace streampunk
