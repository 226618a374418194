// Runs WebRTC's AEC3 (webrtc::AudioProcessing from Debian's webrtc-audio-processing 1.x) over a far end and a
// microphone recording, for the comparison bench (bench/webrtc-aec3.bench.ts, issue #15). No sound card: the
// far end's 10 ms frame k goes to ProcessReverseStream, then the microphone's frame k to ProcessStream, as a
// real-time client interleaves them, so the echo in the microphone is exactly the room's delay behind.
//   aec3 <far.s16> <mic.s16> <out.s16> <rate> <delays> <ns> [stats.tsv]
//   rate: 16000 | 32000 | 48000 (mono s16 native endian, both inputs at this rate)
//   delays: "none" (set_stream_delay_ms(0): AEC3 finds the delay itself), or "ms@fromMs,..." e.g. "87@0,150@10000":
//           the delay hint given from that time on
//   ns: off | low | moderate | high | veryhigh
// Prints one JSON line: seconds of audio, CPU ms spent in ProcessReverseStream + ProcessStream, the library's stats.
// stats.tsv (optional): every 100 ms, time ms, AEC3's delay estimate (ms), its ERL and ERLE estimates (dB).
#include <modules/audio_processing/include/audio_processing.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

namespace {

std::vector<int16_t> readS16(const char* path) {
  FILE* f = std::fopen(path, "rb");
  if (!f) {
    std::fprintf(stderr, "aec3: cannot open %s\n", path);
    std::exit(2);
  }
  std::vector<int16_t> v;
  int16_t buf[4096];
  size_t n;
  while ((n = std::fread(buf, sizeof(int16_t), 4096, f)) > 0) v.insert(v.end(), buf, buf + n);
  std::fclose(f);
  return v;
}

double cpuMs() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

struct Hint {
  int delayMs;
  long fromMs;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 7) {
    std::fprintf(stderr, "usage: aec3 <far.s16> <mic.s16> <out.s16> <rate> <none|ms@fromMs,...> <off|low|moderate|high|veryhigh> [stats.tsv]\n");
    return 2;
  }
  const int rate = std::atoi(argv[4]);
  if (rate != 16000 && rate != 32000 && rate != 48000) {
    std::fprintf(stderr, "aec3: rate must be 16000, 32000 or 48000, not %s\n", argv[4]);
    return 2;
  }
  std::vector<Hint> hints;
  if (std::strcmp(argv[5], "none") != 0) {
    std::string s = argv[5];
    size_t at = 0;
    while (at < s.size()) {
      size_t end = s.find(',', at);
      if (end == std::string::npos) end = s.size();
      Hint h{};
      if (std::sscanf(s.substr(at, end - at).c_str(), "%d@%ld", &h.delayMs, &h.fromMs) != 2) {
        std::fprintf(stderr, "aec3: bad delay hint %s (ms@fromMs)\n", s.substr(at, end - at).c_str());
        return 2;
      }
      hints.push_back(h);
      at = end + 1;
    }
  }
  const std::string ns = argv[6];

  webrtc::AudioProcessing::Config config;
  config.echo_canceller.enabled = true;
  config.echo_canceller.mobile_mode = false;  // AEC3 (mobile_mode is AECM, the old fixed-point one)
  config.high_pass_filter.enabled = true;
  config.noise_suppression.enabled = ns != "off";
  if (ns == "low") config.noise_suppression.level = webrtc::AudioProcessing::Config::NoiseSuppression::kLow;
  else if (ns == "moderate") config.noise_suppression.level = webrtc::AudioProcessing::Config::NoiseSuppression::kModerate;
  else if (ns == "high") config.noise_suppression.level = webrtc::AudioProcessing::Config::NoiseSuppression::kHigh;
  else if (ns == "veryhigh") config.noise_suppression.level = webrtc::AudioProcessing::Config::NoiseSuppression::kVeryHigh;
  else if (ns != "off") {
    std::fprintf(stderr, "aec3: ns must be off, low, moderate, high or veryhigh, not %s\n", ns.c_str());
    return 2;
  }
  config.gain_controller1.enabled = false;
  config.gain_controller2.enabled = false;
  config.pipeline.maximum_internal_processing_rate = 48000;
  std::unique_ptr<webrtc::AudioProcessing> apm(webrtc::AudioProcessingBuilder().Create());
  apm->ApplyConfig(config);
  const webrtc::StreamConfig stream(rate, 1);
  apm->Initialize();

  const std::vector<int16_t> far = readS16(argv[1]);
  const std::vector<int16_t> mic = readS16(argv[2]);
  const size_t frame = rate / 100;
  const size_t frames = std::min(far.size(), mic.size()) / frame;
  std::vector<int16_t> out(mic.size(), 0);
  FILE* stats = argc > 7 ? std::fopen(argv[7], "w") : nullptr;
  if (argc > 7 && !stats) {
    std::fprintf(stderr, "aec3: cannot write %s\n", argv[7]);
    return 2;
  }
  if (stats) std::fprintf(stats, "ms\tdelay_ms\terl_db\terle_db\n");
  std::vector<int16_t> scratch(frame);
  double cpu = 0;
  int errors = 0;
  for (size_t k = 0; k < frames; k++) {
    const long nowMs = static_cast<long>(k * 10);
    int hint = 0;
    for (const Hint& h : hints)
      if (nowMs >= h.fromMs) hint = h.delayMs;
    const double c0 = cpuMs();
    if (apm->ProcessReverseStream(&far[k * frame], stream, stream, scratch.data()) != 0) errors++;
    apm->set_stream_delay_ms(hint);
    if (apm->ProcessStream(&mic[k * frame], stream, stream, &out[k * frame]) != 0) errors++;
    cpu += cpuMs() - c0;
    if (stats && k % 10 == 9) {
      const webrtc::AudioProcessingStats s = apm->GetStatistics();
      std::fprintf(stats, "%ld\t%d\t%.2f\t%.2f\n", nowMs + 10, s.delay_ms ? *s.delay_ms : -1,
                   s.echo_return_loss ? *s.echo_return_loss : -999.0,
                   s.echo_return_loss_enhancement ? *s.echo_return_loss_enhancement : -999.0);
    }
  }
  if (stats) std::fclose(stats);
  FILE* o = std::fopen(argv[3], "wb");
  if (!o || std::fwrite(out.data(), sizeof(int16_t), out.size(), o) != out.size()) {
    std::fprintf(stderr, "aec3: cannot write %s\n", argv[3]);
    return 2;
  }
  std::fclose(o);
  const webrtc::AudioProcessingStats s = apm->GetStatistics();
  std::printf("{\"seconds\":%.3f,\"cpuMs\":%.3f,\"errors\":%d,\"delayMs\":%d,\"erleDb\":%.2f}\n",
              static_cast<double>(frames) / 100.0, cpu, errors, s.delay_ms ? *s.delay_ms : -1,
              s.echo_return_loss_enhancement ? *s.echo_return_loss_enhancement : -999.0);
  return 0;
}
