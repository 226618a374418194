// speaker-agent addition (PATCHES.md item 9): unload the ALSA plugins PortAudio's device probing loaded.
//
// Why: Pa_Initialize opens every PCM defined in the ALSA configuration to list devices. Each open dlopens the
// plugin's module, and alsa-lib keeps every module it loaded in a cache until the global configuration is
// freed, which PortAudio does only in Pa_Terminate, when the last stream closes: on a speaker, never. On
// Debian / Raspberry Pi OS with libasound2-plugins (the package that brings the PulseAudio/PipeWire plugin)
// that includes the a52 and lavrate plugins, which link libavcodec and its ~60 libraries: 10 MB of a speaker's
// resident memory that never plays a sample. snd_config_update_free_global() drops the global configuration
// and dlcloses every cached module no open PCM uses; ALSA reloads both on the next open.
// Then malloc_trim returns the pages the freed configuration tree leaves in the heap.
// Looked up at run time so the addon still builds and runs where PortAudio is not linked against ALSA.
// Called on the JS thread right after a stream is opened (the only thread that opens streams or lists devices).
#pragma once
#if defined(__linux__)
#include <dlfcn.h>
#include <cstdlib>
#endif
#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace streampunk {

inline void releaseUnusedAlsaPlugins() {
#if defined(__linux__)
  if (getenv("NAUDIODON_KEEP_ALSA_PLUGINS")) return;
  typedef int (*FreeGlobal)(void);
  static FreeGlobal freeGlobal = reinterpret_cast<FreeGlobal>(dlsym(RTLD_DEFAULT, "snd_config_update_free_global"));
  if (freeGlobal) freeGlobal();
#endif
#if defined(__GLIBC__)
  // The configuration tree is thousands of small allocations made among long-lived ones; glibc keeps the freed
  // pages resident (5-15 MB here) unless asked to hand them back.
  malloc_trim(0);
#endif
}

}  // namespace streampunk
