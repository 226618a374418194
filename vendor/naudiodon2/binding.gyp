# naudiodon2 2.5.0, patched: on Linux, every architecture links the distribution's PortAudio
# (Debian: portaudio19-dev) instead of the x86-64/armhf binaries upstream bundles, which cannot
# link on arm64 (Streampunk/naudiodon#68) and break when node_modules is moved (absolute RUNPATH).
# It links the static archive, with the ALSA-only host API table of src/PaHostApis.c, so neither
# libportaudio.so nor the libjack it needs is loaded (PATCHES.md item 13); --exclude-libs keeps
# PortAudio's symbols inside the addon.
{
  "targets": [
    {
      "target_name": "naudiodon",
      "sources": [
        "src/naudiodonUtil.cc",
        "src/naudiodon.cc",
        "src/GetDevices.cc",
        "src/GetHostAPIs.cc",
        "src/AudioIO.cc",
        "src/PaContext.cc",
        "src/FrameIO.cc",
        "src/PaHostApis.c"
      ],
      "conditions": [
        [
          'OS=="linux"', {
            "cflags_cc!": ["-fno-rtti", "-fno-exceptions"],
            "cflags_cc": ["-std=c++11", "-fexceptions"],
            "link_settings": {
              "libraries": ["-l:libportaudio.a", "-Wl,--exclude-libs,libportaudio.a", "-lasound", "-lm", "-lpthread", "-ldl"]
            }
          }
        ]
      ]
    }
  ]
}
