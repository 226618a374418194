// speaker-agent addition (PATCHES.md item 8): a lean, callback-driven PortAudio stream for one direction.
//
// Why: AudioIO moves every 20 ms chunk through a libuv pool thread (async work blocking on a condition
// variable), a promise, and a Node Readable/Writable stream. For a call (100 chunks/s) that machinery cost
// more CPU than the audio work itself, and each open stream held one of the four pool threads. FrameIO:
//   - capture: the PortAudio callback copies the samples and hands them to JS through a thread-safe function
//     (non-blocking; if JS is stalled and 32 chunks are waiting, the chunk is dropped and counted);
//   - playback: write() copies a chunk into a byte ring synchronously (no thread hop); the PortAudio callback
//     takes from the ring and plays silence for whatever is missing (the card never starves, a late writer
//     costs a gap, not an ever-growing delay), then tells JS how many bytes it consumed, which paces playout
//     by the card's clock. A full ring drops its oldest bytes (latency stays bounded).
// Neither callback ever blocks or waits on JS.
//
// JS: new FrameIO({ input, deviceId | deviceString, sampleRate, channelCount, framesPerBuffer, latencyMs, ringBytes }, cb)
//   deviceString (PATCHES.md item 18): an ALSA PCM name, opened by ALSA without PortAudio's device list
//   input:  cb(buf: Buffer, statusFlags: number, atMs: number, latencyMs: number)
//   output: cb(consumedBytes: number, statusFlags: number, starvedBytes: number, atMs: number, latencyMs: number)
//   atMs: when the callback ran (steady clock, the one process.hrtime reads); latencyMs: PortAudio's time info of
//   the buffer (capture: currentTime - inputBufferAdcTime; playback: outputBufferDacTime - currentTime; ALSA's
//   delay; 0 when PortAudio gives none, as at an output underflow). Item 16 of PATCHES.md.
//   start(), write(buf) -> bytes dropped from the ring to make room (normally 0), close() -> Promise (idempotent),
//   stats() -> { droppedChunks, droppedBytes, starvedCallbacks, realtime }
//   realtimePriority (option, default 0 = off): the audio thread asks for SCHED_FIFO at that priority in its first
//   callback (PATCHES.md item 17); stats().realtime: -1 not yet asked, 0 granted, else the errno (EPERM without
//   CAP_SYS_NICE or an RLIMIT_RTPRIO that high).
//   msSinceCallback() -> ms since the audio callback last ran (since start() before the first one): the stall
//   watchdog reads the audio thread's own clock, so a busy event loop is never mistaken for a stalled device.
#include "AlsaProbeList.h"
#include <node_api.h>
#include <chrono>
#include <portaudio.h>
#include <pa_linux_alsa.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>
#include "AlsaPluginCache.h"
#include "PaLock.h"

namespace streampunk {

namespace {

int64_t steadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The callback's timing (speaker-agent, PATCHES.md item 16): when it ran (steady clock, the one process.hrtime
// reads) and PortAudio's latency of the buffer (capture: currentTime - inputBufferAdcTime; playback:
// outputBufferDacTime - currentTime), in ms. As a difference it does not depend on the clock of PortAudio's
// currentTime (ALSA's status timestamp, whose clock varies with the device and plugin).
struct Timing {
  double atMs;
  double latencyMs;
};

Timing timingOf(const PaStreamCallbackTimeInfo* ti, bool input) {
  Timing t;
  t.atMs = (double)steadyNowNs() / 1e6;
  t.latencyMs = ti ? (input ? ti->currentTime - ti->inputBufferAdcTime : ti->outputBufferDacTime - ti->currentTime) * 1e3 : 0;
  return t;
}

struct InChunk {
  uint32_t bytes;
  uint32_t flags;
  Timing timing;
  uint8_t data[1];
};

struct OutNote {
  uint32_t consumed;
  uint32_t starved;
  uint32_t flags;
  Timing timing;
};

class FrameIO {
 public:
  bool input = false;
  PaStream* stream = nullptr;
  bool paInitialized = false;
  uint32_t bytesPerSampleFrame = 2;
  napi_threadsafe_function tsfn = nullptr;
  napi_ref wrapper = nullptr;
  std::atomic<bool> closing{false};
  bool closed = false;
  bool started = false;
  // playback ring
  std::mutex m;
  std::vector<uint8_t> ring;
  size_t head = 0;
  size_t count = 0;
  // stats
  std::atomic<uint32_t> droppedChunks{0};
  std::atomic<uint64_t> droppedBytes{0};
  std::atomic<uint32_t> starvedCallbacks{0};
  // real-time scheduling of the audio thread (item 17): asked for once, from the thread itself
  int realtimePriority = 0;
  std::atomic<int> realtime{-1};
  void askRealtime() {
    if (realtimePriority <= 0 || realtime.load(std::memory_order_relaxed) != -1) return;
    sched_param sp{};
    sp.sched_priority = realtimePriority;
    realtime.store(pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp), std::memory_order_relaxed);
  }
  // steady_clock nanoseconds of the last callback (or of start()), written by the audio thread
  std::atomic<int64_t> lastCallbackNs{0};
  void shutdownStream() {
    std::lock_guard<std::recursive_mutex> paGuard(paLock());
    if (stream) {
      Pa_AbortStream(stream);
      Pa_CloseStream(stream);
      stream = nullptr;
    }
    if (paInitialized) {
      Pa_Terminate();
      paInitialized = false;
    }
  }

};

int InputCallback(const void* in, void*, unsigned long frameCount, const PaStreamCallbackTimeInfo* ti,
                  PaStreamCallbackFlags flags, void* user) {
  FrameIO* io = static_cast<FrameIO*>(user);
  io->askRealtime();
  Timing timing = timingOf(ti, true);
  io->lastCallbackNs.store(steadyNowNs(), std::memory_order_relaxed);
  if (io->closing.load(std::memory_order_relaxed)) return paContinue;
  // malloc in the audio thread: glibc's per-thread cache serves a same-size block here; AudioIO allocated too.
  uint32_t bytes = frameCount * io->bytesPerSampleFrame;
  InChunk* c = static_cast<InChunk*>(malloc(sizeof(InChunk) + bytes));
  if (!c) return paContinue;
  c->bytes = bytes;
  c->flags = (uint32_t)flags;
  c->timing = timing;
  if (in) memcpy(c->data, in, bytes);
  else memset(c->data, 0, bytes);
  if (napi_call_threadsafe_function(io->tsfn, c, napi_tsfn_nonblocking) != napi_ok) {
    free(c);
    io->droppedChunks++;
  }
  return paContinue;
}

int OutputCallback(const void*, void* out, unsigned long frameCount, const PaStreamCallbackTimeInfo* ti,
                   PaStreamCallbackFlags flags, void* user) {
  FrameIO* io = static_cast<FrameIO*>(user);
  io->askRealtime();
  Timing timing = timingOf(ti, false);
  io->lastCallbackNs.store(steadyNowNs(), std::memory_order_relaxed);
  uint8_t* dst = static_cast<uint8_t*>(out);
  uint32_t want = frameCount * io->bytesPerSampleFrame;
  uint32_t got = 0;
  {
    std::lock_guard<std::mutex> lk(io->m);
    size_t size = io->ring.size();
    while (got < want && io->count > 0) {
      size_t n = std::min<size_t>(want - got, std::min<size_t>(io->count, size - io->head));
      memcpy(dst + got, io->ring.data() + io->head, n);
      io->head = (io->head + n) % size;
      io->count -= n;
      got += n;
    }
  }
  if (got < want) {
    memset(dst + got, 0, want - got);
    io->starvedCallbacks++;
  }
  if (io->closing.load(std::memory_order_relaxed)) return paContinue;
  OutNote* note = static_cast<OutNote*>(malloc(sizeof(OutNote)));
  if (!note) return paContinue;
  note->consumed = got;
  note->starved = want - got;
  note->flags = (uint32_t)flags;
  note->timing = timing;
  if (napi_call_threadsafe_function(io->tsfn, note, napi_tsfn_nonblocking) != napi_ok) {
    free(note);
    io->droppedChunks++;
  }
  return paContinue;
}

void CallJsInput(napi_env env, napi_value cb, void* context, void* data) {
  InChunk* c = static_cast<InChunk*>(data);
  FrameIO* io = static_cast<FrameIO*>(context);
  if (env != nullptr && !io->closing.load()) {
    napi_value argv[4], undefined, result;
    void* bufData;
    if (napi_create_buffer_copy(env, c->bytes, c->data, &bufData, &argv[0]) == napi_ok &&
        napi_create_uint32(env, c->flags, &argv[1]) == napi_ok && napi_create_double(env, c->timing.atMs, &argv[2]) == napi_ok &&
        napi_create_double(env, c->timing.latencyMs, &argv[3]) == napi_ok && napi_get_undefined(env, &undefined) == napi_ok) {
      napi_call_function(env, undefined, cb, 4, argv, &result);
    }
  }
  free(c);
}

void CallJsOutput(napi_env env, napi_value cb, void* context, void* data) {
  OutNote* note = static_cast<OutNote*>(data);
  FrameIO* io = static_cast<FrameIO*>(context);
  uint32_t consumed = note->consumed, starved = note->starved, flags = note->flags;
  Timing timing = note->timing;
  free(note);
  // env is null while the tsfn is torn down (after close): io may be gone then, so it is not touched.
  if (env == nullptr || io->closing.load()) return;
  napi_value argv[5], undefined, result;
  if (napi_create_uint32(env, consumed, &argv[0]) == napi_ok && napi_create_uint32(env, flags, &argv[1]) == napi_ok &&
      napi_create_uint32(env, starved, &argv[2]) == napi_ok && napi_create_double(env, timing.atMs, &argv[3]) == napi_ok &&
      napi_create_double(env, timing.latencyMs, &argv[4]) == napi_ok && napi_get_undefined(env, &undefined) == napi_ok) {
    napi_call_function(env, undefined, cb, 5, argv, &result);
  }
}

void FinalizeTsfn(napi_env, void*, void*) {}

// speaker-agent (PATCHES.md item 19): every signal blocked on this (the JS) thread while PortAudio and ALSA create
// their threads (the audio callback thread at start, a sound server plugin's at open), which inherit the mask, then
// restored. Node's SIGCHLD (a finished child: amixer) could otherwise land on PortAudio's callback thread while
// PortAudio cancelled it (AbortStream's pthread_cancel): libuv's handler then blocked on its signal lock inside the
// cancellation, the close's pthread_join never returned with the PortAudio lock held, and the event loop waited
// on that lock for good (a test run hung 45 minutes; gdb: sigcancel_handler -> uv__signal_handler(17)).
struct SignalsBlocked {
  sigset_t saved;
  SignalsBlocked() {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &saved);
  }
  ~SignalsBlocked() { pthread_sigmask(SIG_SETMASK, &saved, nullptr); }
};

bool GetNumber(napi_env env, napi_value obj, const char* name, double def, double* out) {
  bool has = false;
  *out = def;
  if (napi_has_named_property(env, obj, name, &has) != napi_ok) return false;
  if (!has) return true;
  napi_value v;
  napi_valuetype t;
  if (napi_get_named_property(env, obj, name, &v) != napi_ok || napi_typeof(env, v, &t) != napi_ok) return false;
  if (t == napi_undefined) return true;
  if (t != napi_number) return false;
  return napi_get_value_double(env, v, out) == napi_ok;
}

napi_value Throw(napi_env env, const std::string& msg) {
  napi_throw_error(env, nullptr, msg.c_str());
  return nullptr;
}

FrameIO* Unwrap(napi_env env, napi_callback_info info, size_t* argc, napi_value* argv) {
  napi_value self;
  if (napi_get_cb_info(env, info, argc, argv, &self, nullptr) != napi_ok) return nullptr;
  FrameIO* io = nullptr;
  if (napi_unwrap(env, self, reinterpret_cast<void**>(&io)) != napi_ok) return nullptr;
  return io;
}

void Destroy(napi_env env, void* data, void*) {
  FrameIO* io = static_cast<FrameIO*>(data);
  // Only reached when JS dropped the object without close(): stop the stream before freeing what it uses.
  io->closing = true;
  io->shutdownStream();
  if (io->tsfn) napi_release_threadsafe_function(io->tsfn, napi_tsfn_abort);
  io->tsfn = nullptr;
  // Chunks still queued in the tsfn are freed with env == null, without touching io: safe to delete it now.
  delete io;
}

napi_value Construct(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2], self;
  if (napi_get_cb_info(env, info, &argc, argv, &self, nullptr) != napi_ok) return nullptr;
  napi_valuetype t0, t1;
  if (argc < 2 || napi_typeof(env, argv[0], &t0) != napi_ok || t0 != napi_object ||
      napi_typeof(env, argv[1], &t1) != napi_ok || t1 != napi_function)
    return Throw(env, "FrameIO expects (options object, callback function)");

  bool isInput = false;
  {
    napi_value v;
    if (napi_get_named_property(env, argv[0], "input", &v) != napi_ok || napi_get_value_bool(env, v, &isInput) != napi_ok)
      return Throw(env, "FrameIO: options.input must be a boolean");
  }
  double deviceId, sampleRate, channels, framesPerBuffer, latencyMs, ringBytes, realtimePriority;
  if (!GetNumber(env, argv[0], "deviceId", -1, &deviceId) || !GetNumber(env, argv[0], "sampleRate", 48000, &sampleRate) ||
      !GetNumber(env, argv[0], "channelCount", 1, &channels) || !GetNumber(env, argv[0], "framesPerBuffer", 960, &framesPerBuffer) ||
      !GetNumber(env, argv[0], "latencyMs", 0, &latencyMs) || !GetNumber(env, argv[0], "ringBytes", 19200, &ringBytes) ||
      !GetNumber(env, argv[0], "realtimePriority", 0, &realtimePriority))
    return Throw(env, "FrameIO: numeric options must be numbers");
  if (channels < 1 || channels > 8 || framesPerBuffer < 1 || framesPerBuffer > 65536 || ringBytes < 2 || ringBytes > (1 << 24) ||
      realtimePriority < 0 || realtimePriority > 99)
    return Throw(env, "FrameIO: options out of range");

  // speaker-agent (PATCHES.md item 18): an ALSA PCM named by its string, opened without PortAudio's device list
  std::string deviceString;
  {
    bool has = false;
    napi_value v;
    napi_valuetype t = napi_undefined;
    if (napi_has_named_property(env, argv[0], "deviceString", &has) != napi_ok) return Throw(env, "FrameIO: bad options");
    if (has && (napi_get_named_property(env, argv[0], "deviceString", &v) != napi_ok || napi_typeof(env, v, &t) != napi_ok))
      return Throw(env, "FrameIO: bad options");
    if (has && t != napi_undefined) {
      size_t len = 0;
      if (t != napi_string || napi_get_value_string_utf8(env, v, nullptr, 0, &len) != napi_ok || len == 0 || len > 256)
        return Throw(env, "FrameIO: options.deviceString must be an ALSA PCM name (1-256 characters)");
      deviceString.resize(len + 1);
      napi_get_value_string_utf8(env, v, &deviceString[0], len + 1, &len);
      deviceString.resize(len);
      if (deviceString.find('\0') != std::string::npos) return Throw(env, "FrameIO: options.deviceString must not contain NUL");
    }
  }

  FrameIO* io = new FrameIO();
  io->input = isInput;
  io->bytesPerSampleFrame = (uint32_t)channels * 2;
  io->realtimePriority = (int)realtimePriority;
  if (!isInput) {
    io->ring.resize((size_t)ringBytes);
  }

  std::lock_guard<std::recursive_mutex> paGuard(paLock());  // held until the stream is open (or cleaned up)
  SignalsBlocked quiet;  // threads made meanwhile get no signal (item 19)
  pruneAlsaProbeList();  // speaker-agent: AlsaProbeList.h
  PaError err = Pa_Initialize();
  if (err != paNoError) {
    delete io;
    return Throw(env, std::string("Could not initialize PortAudio: ") + Pa_GetErrorText(err));
  }
  io->paInitialized = true;

  PaStreamParameters p;
  memset(&p, 0, sizeof(p));
  PaAlsaStreamInfo alsa;  // read by Pa_OpenStream only
  if (!deviceString.empty()) {
    // The device list PortAudio made at its first Pa_Initialize stays as it was while any stream is open (a new
    // Pa_Initialize only counts up): a card plugged in, or a PCM defined, after that is not in it. ALSA opens
    // the name itself; PortAudio converts nothing more than it would for a listed plug device.
    PaAlsa_InitializeStreamInfo(&alsa);
    alsa.deviceString = deviceString.c_str();
    p.device = paUseHostApiSpecificDeviceSpecification;
    p.channelCount = (int)channels;
    p.sampleFormat = paInt16;
    p.suggestedLatency = latencyMs > 0 ? latencyMs / 1000.0 : 0.04;
    p.hostApiSpecificStreamInfo = &alsa;
  }
  int dev = (int)deviceId;
  if (deviceString.empty()) p.device = (dev >= 0 && dev < Pa_GetDeviceCount()) ? dev : (isInput ? Pa_GetDefaultInputDevice() : Pa_GetDefaultOutputDevice());
  if (deviceString.empty() && p.device == paNoDevice) {
    io->shutdownStream();
    delete io;
    return Throw(env, "No default device");
  }
  if (deviceString.empty()) {
    const PaDeviceInfo* di = Pa_GetDeviceInfo(p.device);
    int maxCh = isInput ? di->maxInputChannels : di->maxOutputChannels;
    if ((int)channels > maxCh) {
      io->shutdownStream();
      delete io;
      return Throw(env, "Invalid number of channels for this device");
    }
    p.channelCount = (int)channels;
    p.sampleFormat = paInt16;
    p.suggestedLatency = latencyMs > 0 ? latencyMs / 1000.0 : (isInput ? di->defaultLowInputLatency : di->defaultLowOutputLatency);
    p.hostApiSpecificStreamInfo = nullptr;
  }
  err = Pa_OpenStream(&io->stream, isInput ? &p : nullptr, isInput ? nullptr : &p, sampleRate, (unsigned long)framesPerBuffer,
                      paNoFlag, isInput ? InputCallback : OutputCallback, io);
  if (err != paNoError) {
    io->stream = nullptr;
    io->shutdownStream();
    delete io;
    releaseUnusedAlsaPlugins();
    std::string text = std::string("Could not open stream: ") + Pa_GetErrorText(err);
    // speaker-agent (item 18): the host API's own text where PortAudio gives only "Unanticipated host error" (an
    // ALSA call that failed in an unexpected place; a PCM ALSA does not know is paBadIODeviceCombination)
    const PaHostErrorInfo* host = err == paUnanticipatedHostError ? Pa_GetLastHostErrorInfo() : nullptr;
    if (host && host->errorText && *host->errorText) text += std::string(": ") + host->errorText;
    return Throw(env, text);
  }
  releaseUnusedAlsaPlugins();  // the probing above loaded every plugin; the open stream keeps its own

  napi_value name;
  napi_create_string_utf8(env, isInput ? "FrameIO.capture" : "FrameIO.playback", NAPI_AUTO_LENGTH, &name);
  if (napi_create_threadsafe_function(env, argv[1], nullptr, name, 32, 1, nullptr, FinalizeTsfn, io,
                                      isInput ? CallJsInput : CallJsOutput, &io->tsfn) != napi_ok) {
    io->shutdownStream();
    delete io;
    return Throw(env, "FrameIO: cannot create the thread-safe callback");
  }
  if (napi_wrap(env, self, io, Destroy, nullptr, nullptr) != napi_ok) {
    io->shutdownStream();
    napi_release_threadsafe_function(io->tsfn, napi_tsfn_abort);
    return Throw(env, "FrameIO: cannot wrap");
  }
  return self;
}

napi_value Start(napi_env env, napi_callback_info info) {
  size_t argc = 0;
  FrameIO* io = Unwrap(env, info, &argc, nullptr);
  if (!io) return nullptr;
  if (io->closed || io->closing || !io->stream) return Throw(env, "FrameIO: stream is closed");
  if (io->started) return nullptr;
  io->lastCallbackNs.store(steadyNowNs());
  std::lock_guard<std::recursive_mutex> paGuard(paLock());
  SignalsBlocked quiet;  // the callback thread PortAudio creates now gets no signal (item 19)
  PaError err = Pa_StartStream(io->stream);
  if (err != paNoError) return Throw(env, std::string("Could not start stream: ") + Pa_GetErrorText(err));
  io->started = true;
  return nullptr;
}

napi_value Write(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  FrameIO* io = Unwrap(env, info, &argc, argv);
  if (!io) return nullptr;
  if (io->input) return Throw(env, "FrameIO: cannot write to a capture stream");
  void* data;
  size_t len;
  bool isBuf = false;
  if (argc < 1 || napi_is_buffer(env, argv[0], &isBuf) != napi_ok || !isBuf || napi_get_buffer_info(env, argv[0], &data, &len) != napi_ok)
    return Throw(env, "FrameIO: write expects a Buffer");
  size_t dropped = 0;
  {
    std::lock_guard<std::mutex> lk(io->m);
    size_t size = io->ring.size();
    const uint8_t* src = static_cast<const uint8_t*>(data);
    if (len > size) {  // only the newest part fits
      dropped += len - size;
      src += len - size;
      len = size;
    }
    if (io->count + len > size) {  // drop the oldest bytes: latency stays bounded
      size_t drop = io->count + len - size;
      io->head = (io->head + drop) % size;
      io->count -= drop;
      dropped += drop;
    }
    size_t tail = (io->head + io->count) % size;
    size_t first = std::min(len, size - tail);
    memcpy(io->ring.data() + tail, src, first);
    memcpy(io->ring.data(), src + first, len - first);
    io->count += len;
  }
  io->droppedBytes += dropped;
  napi_value r;
  napi_create_uint32(env, (uint32_t)dropped, &r);
  return r;
}

struct CloseWork {
  FrameIO* io;
  napi_deferred deferred;
  napi_async_work work;
  napi_ref self;
};

void CloseExecute(napi_env, void* data) {
  static_cast<CloseWork*>(data)->io->shutdownStream();
}

void CloseComplete(napi_env env, napi_status, void* data) {
  CloseWork* w = static_cast<CloseWork*>(data);
  // The stream is stopped: no callback can run any more, so the tsfn can go.
  if (w->io->tsfn) napi_release_threadsafe_function(w->io->tsfn, napi_tsfn_abort);
  w->io->tsfn = nullptr;
  w->io->closed = true;
  napi_value undefined;
  napi_get_undefined(env, &undefined);
  napi_resolve_deferred(env, w->deferred, undefined);
  napi_delete_async_work(env, w->work);
  napi_delete_reference(env, w->self);
  delete w;
}

napi_value Close(napi_env env, napi_callback_info info) {
  napi_value self, promise;
  size_t argc = 0;
  if (napi_get_cb_info(env, info, &argc, nullptr, &self, nullptr) != napi_ok) return nullptr;
  FrameIO* io = nullptr;
  if (napi_unwrap(env, self, reinterpret_cast<void**>(&io)) != napi_ok || !io) return nullptr;
  CloseWork* w = new CloseWork{io, nullptr, nullptr, nullptr};
  napi_create_promise(env, &w->deferred, &promise);
  if (io->closing.exchange(true)) {  // already closing or closed: resolve at once
    napi_value undefined;
    napi_get_undefined(env, &undefined);
    napi_resolve_deferred(env, w->deferred, undefined);
    delete w;
    return promise;
  }
  napi_create_reference(env, self, 1, &w->self);
  napi_value name;
  napi_create_string_utf8(env, "FrameIO.close", NAPI_AUTO_LENGTH, &name);
  napi_create_async_work(env, nullptr, name, CloseExecute, CloseComplete, w, &w->work);
  napi_queue_async_work(env, w->work);
  return promise;
}

napi_value Stats(napi_env env, napi_callback_info info) {
  size_t argc = 0;
  FrameIO* io = Unwrap(env, info, &argc, nullptr);
  if (!io) return nullptr;
  napi_value o, v;
  napi_create_object(env, &o);
  napi_create_uint32(env, io->droppedChunks.load(), &v);
  napi_set_named_property(env, o, "droppedChunks", v);
  napi_create_double(env, (double)io->droppedBytes.load(), &v);
  napi_set_named_property(env, o, "droppedBytes", v);
  napi_create_uint32(env, io->starvedCallbacks.load(), &v);
  napi_set_named_property(env, o, "starvedCallbacks", v);
  napi_create_int32(env, io->realtime.load(), &v);
  napi_set_named_property(env, o, "realtime", v);
  return o;
}

napi_value MsSinceCallback(napi_env env, napi_callback_info info) {
  size_t argc = 0;
  FrameIO* io = Unwrap(env, info, &argc, nullptr);
  if (!io) return nullptr;
  napi_value v;
  napi_create_double(env, (double)(steadyNowNs() - io->lastCallbackNs.load(std::memory_order_relaxed)) / 1e6, &v);
  return v;
}

}  // namespace

napi_status InitFrameIO(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
      {"start", nullptr, Start, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"write", nullptr, Write, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"close", nullptr, Close, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"stats", nullptr, Stats, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"msSinceCallback", nullptr, MsSinceCallback, nullptr, nullptr, nullptr, napi_default, nullptr},
  };
  napi_value cls;
  napi_status s = napi_define_class(env, "FrameIO", NAPI_AUTO_LENGTH, Construct, nullptr, sizeof(props) / sizeof(props[0]), props, &cls);
  if (s != napi_ok) return s;
  return napi_set_named_property(env, exports, "FrameIO", cls);
}

}  // namespace streampunk
