// speaker-agent addition (PATCHES.md item 12): keep PortAudio from probing ALSA PCMs a speaker never uses.
//
// Why: Pa_Initialize opens every PCM defined in the ALSA configuration to list devices. libasound2-plugins (the
// package that brings the PulseAudio/PipeWire plugin on Debian and Raspberry Pi OS) defines encoder and
// converter PCMs whose modules pull in large libraries: a52 links libavcodec, which maps x265, vorbis, glib and
// ~60 more. Item 9 unloads the plugin modules again, but libraries marked not to be unloaded (glib, x265) stay:
// ~3.5 MB of the idle agent's resident memory, and probing them costs start-up time and stderr noise. Before each
// Pa_Initialize the global configuration is loaded and these PCM definitions are deleted from it, so PortAudio
// never opens them: the a52 (AC-3 encoder), jack (needs a JACK server), oss (needs /dev/dsp), upmix/vdownmix
// (channel converters), usb_stream, speex and lavrate/samplerate/speexrate (sample-rate converter wrappers).
// Real cards, "default", "sysdefault", "dmix", "pulse" and a user's own definitions are untouched.
// NAUDIODON_PROBE_ALL_ALSA_PCMS=1 switches it off (for a board that plays through one of these).
// Looked up at run time, as in AlsaPluginCache.h: a no-op where PortAudio has no ALSA.
#pragma once
#if defined(__linux__)
#include <dlfcn.h>
#include <cstdlib>
#include <cstring>
#endif

namespace streampunk {

inline bool isUnusedAlsaPcm(const char* id, const char* type) {
  static const char* const types[] = {"a52", "jack", "oss", "upmix", "vdownmix", "usb_stream", "speex", nullptr};
  static const char* const rateIds[] = {"lavrate", "samplerate", "speexrate", nullptr};
  for (int i = 0; types[i]; i++)
    if (!strcmp(type, types[i])) return true;
  if (!strcmp(type, "rate"))
    for (int i = 0; rateIds[i]; i++)
      if (!strcmp(id, rateIds[i])) return true;
  return false;
}

/** Call with the PortAudio lock held, right before Pa_Initialize. */
inline void pruneAlsaProbeList() {
#if defined(__linux__)
  if (getenv("NAUDIODON_PROBE_ALL_ALSA_PCMS")) return;
  struct Alsa {
    void** config;  // &snd_config
    int (*update)();
    int (*search)(void*, const char*, void**);
    void* (*first)(const void*);
    void* (*next)(void*);
    void* (*end)(const void*);
    void* (*entry)(void*);
    int (*getId)(const void*, const char**);
    int (*getString)(const void*, const char**);
    int (*del)(void*);
    bool ok;
  };
  static Alsa a = [] {
    Alsa x{};
    x.config = reinterpret_cast<void**>(dlsym(RTLD_DEFAULT, "snd_config"));
    x.update = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "snd_config_update"));
    x.search = reinterpret_cast<int (*)(void*, const char*, void**)>(dlsym(RTLD_DEFAULT, "snd_config_search"));
    x.first = reinterpret_cast<void* (*)(const void*)>(dlsym(RTLD_DEFAULT, "snd_config_iterator_first"));
    x.next = reinterpret_cast<void* (*)(void*)>(dlsym(RTLD_DEFAULT, "snd_config_iterator_next"));
    x.end = reinterpret_cast<void* (*)(const void*)>(dlsym(RTLD_DEFAULT, "snd_config_iterator_end"));
    x.entry = reinterpret_cast<void* (*)(void*)>(dlsym(RTLD_DEFAULT, "snd_config_iterator_entry"));
    x.getId = reinterpret_cast<int (*)(const void*, const char**)>(dlsym(RTLD_DEFAULT, "snd_config_get_id"));
    x.getString = reinterpret_cast<int (*)(const void*, const char**)>(dlsym(RTLD_DEFAULT, "snd_config_get_string"));
    x.del = reinterpret_cast<int (*)(void*)>(dlsym(RTLD_DEFAULT, "snd_config_delete"));
    x.ok = x.config && x.update && x.search && x.first && x.next && x.end && x.entry && x.getId && x.getString && x.del;
    return x;
  }();
  if (!a.ok || a.update() < 0 || !*a.config) return;
  void* pcms = nullptr;
  if (a.search(*a.config, "pcm", &pcms) < 0 || !pcms) return;
  for (void *i = a.first(pcms), *next; i != a.end(pcms); i = next) {
    next = a.next(i);  // taken before the entry may be deleted
    void* node = a.entry(i);
    void* typeNode = nullptr;
    const char *id = nullptr, *type = nullptr;
    if (a.getId(node, &id) < 0 || !id) continue;
    if (a.search(node, "type", &typeNode) < 0 || a.getString(typeNode, &type) < 0 || !type) continue;
    if (isUnusedAlsaPcm(id, type)) a.del(node);
  }
#endif
}

}  // namespace streampunk
