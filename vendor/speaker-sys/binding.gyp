# Two small addons, built by `npm ci` like vendor/naudiodon2:
# - speaker_sys: one C file, libc only, pure Node-API (dup/dup2, the sd_notify datagram, malloc_trim, alsa-lib's
#   xrun lines counted: alsa-lib is reached with dlopen, not linked);
# - speaker_sys_v8: V8's memory-pressure call, against the V8 headers node-gyp builds with. Linked with -z now so
#   a node without those symbols fails to load it (index.js then does without) instead of aborting at the call;
# - speaker_sys_srtp: AES-128-GCM for SRTP with node's own OpenSSL (src/srtp_gcm.c), linked with -z now likewise;
# - node_preload.so: not an addon but a library the systemd units preload into node (src/node_preload.c says why).
{
  "targets": [
    {
      "target_name": "speaker_sys",
      "sources": ["src/speaker_sys.c"],
      "cflags_c": ["-std=c11"],
      "cflags": ["-Wall", "-Wextra"],
      "libraries": ["-ldl"]
    },
    {
      "target_name": "speaker_sys_v8",
      "sources": ["src/v8_memory.cc"],
      "cflags": ["-Wall", "-Wextra"],
      "ldflags": ["-Wl,-z,now"]
    },
    {
      "target_name": "speaker_sys_srtp",
      "sources": ["src/srtp_gcm.c"],
      "cflags_c": ["-std=c11"],
      "cflags": ["-Wall", "-Wextra"],
      "ldflags": ["-Wl,-z,now"]
    },
    {
      "target_name": "node_preload",
      "type": "shared_library",
      "product_prefix": "",
      "sources": ["src/node_preload.c"],
      "cflags_c": ["-std=c11"],
      "cflags": ["-Wall", "-Wextra"],
      "libraries": ["-ldl"]
    }
  ]
}
