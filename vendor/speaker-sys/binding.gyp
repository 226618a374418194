# One C file (libc only) and one C++ file (V8's memory-pressure call, from the headers node-gyp builds against):
# built by `npm ci` like vendor/naudiodon2.
{
  "targets": [
    {
      "target_name": "speaker_sys",
      "sources": ["src/speaker_sys.c", "src/v8_memory.cc"],
      "cflags_c": ["-std=c11"],
      "cflags": ["-Wall", "-Wextra"]
    }
  ]
}
