// V8's memory-pressure notification, for which Node has no JavaScript API (used by src/common/memoryKeeper.ts).
// At "moderate" pressure V8 starts an incremental mark-compact that also shrinks the heap: marking runs in small
// steps between tasks (pauses of 9-16 ms on the busy development machine). gc() from --expose-gc instead collects
// in one atomic pause: 11-21 ms there, and 155 ms once under load, several times a playback frame.
//
// A separate addon (speaker_sys_v8.node), linked with -z now: it calls V8's C++ API, which is not ABI-stable
// the way Node-API is. Should a future node lack these symbols, loading this addon fails at once, index.js leaves
// memoryPressure undefined and the memory keeper falls back to gc(); dup/dup2/sd_notify (speaker_sys.node, pure
// Node-API) are not affected.
#include <node_api.h>
#include <v8.h>

static napi_value MemoryPressure(napi_env env, napi_callback_info info) {
  (void)info;
  v8::Isolate* isolate = v8::Isolate::GetCurrent();
  if (isolate != nullptr) isolate->MemoryPressureNotification(v8::MemoryPressureLevel::kModerate);
  napi_value result;
  napi_get_undefined(env, &result);
  return result;
}

NAPI_MODULE_INIT() {
  napi_property_descriptor props[] = {
      {"memoryPressure", nullptr, MemoryPressure, nullptr, nullptr, nullptr, napi_default, nullptr},
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  return exports;
}
