# One C file, no dependencies beyond libc: built by `npm ci` like vendor/naudiodon2.
{
  "targets": [
    {
      "target_name": "speaker_sys",
      "sources": ["src/speaker_sys.c"],
      "cflags": ["-std=c11", "-Wall", "-Wextra"]
    }
  ]
}
