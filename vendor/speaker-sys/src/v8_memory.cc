// V8's memory-pressure notification, for which Node has no JavaScript API (used by src/common/memoryKeeper.ts).
// At "moderate" pressure V8 starts an incremental mark-compact that also shrinks the heap: marking runs in small
// steps between tasks (pauses of 9-16 ms on the busy development machine). gc() from --expose-gc instead collects
// in one atomic pause: 11-21 ms there, and 155 ms once under load, several times a playback frame.
#include <node_api.h>
#include <v8.h>

extern "C" napi_value SpeakerSysMemoryPressure(napi_env env, napi_callback_info info) {
  (void)info;
  v8::Isolate* isolate = v8::Isolate::GetCurrent();
  if (isolate != nullptr) isolate->MemoryPressureNotification(v8::MemoryPressureLevel::kModerate);
  napi_value result;
  napi_get_undefined(env, &result);
  return result;
}
