// The system calls the agent needs and Node does not offer (see README.md):
//   dup(fd) -> new fd                     dup2(from, to)
//   sendDatagram(addr: Buffer, addrLen, message: Buffer) -> 0 or -errno
//   mallocTrim() -> true when memory was returned to the kernel
//   pageOutFileMappings() -> bytes of read-only file mappings handed to the kernel, or -errno
// dup/dup2 point the process's stdout/stderr elsewhere around native libraries that print (ALSA, PortAudio);
// sendDatagram sends one AF_UNIX datagram (sd_notify) from the main PID without blocking. Errors of dup/dup2
// throw an Error with `code` set to the errno name; sendDatagram returns -errno (a lost notification is
// reported by the caller, never thrown). mallocTrim is glibc's malloc_trim(0): free memory inside malloc's arenas
// (not only at their top) goes back to the kernel; elsewhere (musl) it does nothing and returns false.
// pageOutFileMappings hands the kernel back the resident pages of every read-only file mapping of the process (the
// code and constants of node and its libraries): start-up code that never runs again leaves memory, the code still
// in use faults back in, page by page, from the disk. See PageOutFileMappings for how.
//   captureAlsaXruns(printThem) -> true when alsa-lib's error handler is ours
//   alsaXruns() -> { underruns, overruns } counted since the capture
// alsa-lib prints "ALSA lib pcm.c:8570:(snd_pcm_recover) underrun occurred" on stderr at each xrun PortAudio
// recovers from (a device it cannot mmap: the PulseAudio or PipeWire plugin): a line in the journal (on the SD
// card) at every glitch, at info priority. The handler counts those two messages instead (printing them only when
// asked: SPEAKER_AGENT_AUDIO_DEBUG) and prints every other message exactly as alsa-lib does. alsa-lib is found
// with dlopen: it is naudiodon's, not linked here.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <fcntl.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <node_api.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>
#if defined(__linux__) && defined(SYS_userfaultfd)
#include <linux/userfaultfd.h>
#define HAVE_UFFD 1
#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif
#ifndef UFFD_FEATURE_WP_ASYNC
#define UFFD_FEATURE_WP_ASYNC (1 << 15) /* Linux 6.7; build hosts may have older headers */
#endif
#endif

static napi_value throw_errno(napi_env env, const char* what, int err) {
  napi_value msg, code, error;
  char text[160];
  snprintf(text, sizeof text, "%s: %s", what, strerror(err));
  napi_create_string_utf8(env, text, NAPI_AUTO_LENGTH, &msg);
  const char* name = err == EBADF ? "EBADF" : err == EMFILE ? "EMFILE" : err == EINVAL ? "EINVAL" : "EIO";
  napi_create_string_utf8(env, name, NAPI_AUTO_LENGTH, &code);
  napi_create_error(env, code, msg, &error);
  napi_throw(env, error);
  return NULL;
}

static int int_arg(napi_env env, napi_value v, int32_t* out) {
  napi_valuetype t;
  return napi_typeof(env, v, &t) == napi_ok && t == napi_number && napi_get_value_int32(env, v, out) == napi_ok;
}

static napi_value Dup(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], result;
  int32_t fd;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1 || !int_arg(env, argv[0], &fd)) {
    napi_throw_type_error(env, NULL, "dup(fd) expects a file descriptor number");
    return NULL;
  }
  int r = fcntl(fd, F_DUPFD_CLOEXEC, 3);  // close-on-exec: children must not inherit the saved copy
  if (r < 0) return throw_errno(env, "dup", errno);
  napi_create_int32(env, r, &result);
  return result;
}

static napi_value Dup2(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  int32_t from, to;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 2 || !int_arg(env, argv[0], &from) ||
      !int_arg(env, argv[1], &to)) {
    napi_throw_type_error(env, NULL, "dup2(from, to) expects two file descriptor numbers");
    return NULL;
  }
  int r;
  do r = dup2(from, to); while (r < 0 && errno == EINTR);
  if (r < 0) return throw_errno(env, "dup2", errno);
  return NULL;
}

static napi_value SendDatagram(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3], result;
  void *addr, *msg;
  size_t addrCap, msgLen;
  int32_t addrLen;
  bool isBuf1 = false, isBuf2 = false;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 3 ||
      napi_is_buffer(env, argv[0], &isBuf1) != napi_ok || !isBuf1 || !int_arg(env, argv[1], &addrLen) ||
      napi_is_buffer(env, argv[2], &isBuf2) != napi_ok || !isBuf2 ||
      napi_get_buffer_info(env, argv[0], &addr, &addrCap) != napi_ok ||
      napi_get_buffer_info(env, argv[2], &msg, &msgLen) != napi_ok) {
    napi_throw_type_error(env, NULL, "sendDatagram(addr: Buffer, addrLen: number, message: Buffer)");
    return NULL;
  }
  if (addrLen < (int32_t)sizeof(sa_family_t) + 1 || (size_t)addrLen > addrCap || (size_t)addrLen > sizeof(struct sockaddr_un)) {
    napi_throw_range_error(env, NULL, "sendDatagram: addrLen out of range for a sockaddr_un");
    return NULL;
  }
  int err = 0;
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    err = errno;
  } else {
    ssize_t n;
    // MSG_DONTWAIT: never block the event loop on a slow reader; MSG_NOSIGNAL: no SIGPIPE.
    do n = sendto(fd, msg, msgLen, MSG_DONTWAIT | MSG_NOSIGNAL, (const struct sockaddr*)addr, (socklen_t)addrLen);
    while (n < 0 && errno == EINTR);
    if (n < 0) err = errno;
    close(fd);
  }
  napi_create_int32(env, -err, &result);
  return result;
}

static napi_value MallocTrim(napi_env env, napi_callback_info info) {
  (void)info;
  int released = 0;
#ifdef __GLIBC__
  released = malloc_trim(0);
#endif
  napi_value result;
  napi_get_boolean(env, released == 1, &result);
  return result;
}

// One read-only, private file mapping without copied-on-write pages (those would be lost: relocated data).
struct ro_mapping {
  unsigned long start, end;
  char path[512];
};

// Reads /proc/self/smaps: the mappings to hand back (r--p or r-xp of a file, Anonymous 0 kB). -errno on failure.
static long ro_file_mappings(struct ro_mapping** out) {
  FILE* smaps = fopen("/proc/self/smaps", "re");
  if (!smaps) return -errno;
  struct ro_mapping* list = NULL;
  long n = 0, cap = 0;
  int candidate = 0;
  struct ro_mapping cur;
  char line[4096];
  while (fgets(line, sizeof line, smaps)) {
    unsigned long start, end, offset;
    char perms[5];
    int pathAt = 0;
    // a mapping's first line: "start-end perms offset dev inode path"
    if (sscanf(line, "%lx-%lx %4s %lx %*s %*s %n", &start, &end, perms, &offset, &pathAt) >= 4 && pathAt > 0) {
      line[strcspn(line, "\n")] = 0;
      candidate = line[pathAt] == '/' && perms[0] == 'r' && perms[1] == '-' && perms[3] == 'p' &&
                  strlen(line + pathAt) < sizeof cur.path;
      if (candidate) {
        cur.start = start;
        cur.end = end;
        strcpy(cur.path, line + pathAt);
      }
      continue;
    }
    unsigned long anon;
    if (candidate && sscanf(line, "Anonymous: %lu kB", &anon) == 1) {
      candidate = 0;
      if (anon != 0) continue;
      if (n == cap) {
        struct ro_mapping* grown = realloc(list, (size_t)(cap = cap ? cap * 2 : 64) * sizeof *list);
        if (!grown) break;
        list = grown;
      }
      list[n++] = cur;
    }
  }
  fclose(smaps);
  *out = list;
  return n;
}

// Linux maps the 64 KB around each page fault of a file mapping from the page cache ("fault-around"), and on
// newer kernels reads executable mappings ahead even under MADV_RANDOM, so each hot page of code brought its 15
// neighbours back into RSS. The kernel skips fault-around in a mapping registered with userfaultfd for write
// protection (mm/memory.c, uffd_disable_fault_around); with WP_ASYNC (Linux 6.7) any mapping may be registered
// and write faults are resolved by the kernel itself, no handler thread (these mappings are never written
// anyway). UFFD_USER_MODE_ONLY: what unprivileged processes may open (vm.unprivileged_userfaultfd=0). The
// descriptor stays open for the life of the process: closing it would unregister the mappings.
static int uffd = -1;
static long faultAroundOff = 0; // mappings registered, or -errno why none

static void no_fault_around(const struct ro_mapping* list, long n) {
#ifdef HAVE_UFFD
  if (uffd < 0) {
    int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
    if (fd < 0) {
      faultAroundOff = -errno;
      return;
    }
    struct uffdio_api api = {.api = UFFD_API, .features = UFFD_FEATURE_WP_ASYNC};
    if (ioctl(fd, UFFDIO_API, &api) != 0) { // EINVAL: a kernel before 6.7
      faultAroundOff = -errno;
      close(fd);
      return;
    }
    uffd = fd;
  }
  long registered = 0;
  for (long i = 0; i < n; i++) {
    struct uffdio_register r = {.range = {.start = list[i].start, .len = list[i].end - list[i].start},
                                .mode = UFFDIO_REGISTER_MODE_WP};
    if (ioctl(uffd, UFFDIO_REGISTER, &r) == 0) registered++;
  }
  faultAroundOff = registered;
#else
  (void)list;
  (void)n;
  faultAroundOff = -ENOSYS;
#endif
}

// Not MADV_PAGEOUT: the kernel pages out a file's pages only for a process that may write the file (a side-channel
// fix, Linux 6.x), so for the agent's user and a root-owned /usr/bin/node it silently did nothing. MADV_DONTNEED
// unmaps any mapping of our own; then the file range's pages no process maps leave the page cache
// (POSIX_FADV_DONTNEED), else the kernel would map them again around each fault ("fault-around", 64 KB).
static napi_value PageOutFileMappings(napi_env env, napi_callback_info info) {
  (void)info;
  struct ro_mapping* list = NULL;
  long n = ro_file_mappings(&list);
  double bytes = 0;
  no_fault_around(list, n); // first: the refaults right after the page-out map single pages
  for (long i = 0; i < n; i++) {
    void* addr = (void*)list[i].start;
    size_t len = list[i].end - list[i].start;
    madvise(addr, len, MADV_RANDOM); // a refault reads its one page, not the pages around it
    if (madvise(addr, len, MADV_DONTNEED) == 0) bytes += (double)len;
  }
  // then each file once, now that none of its pages is mapped here: the whole file, for node reads parts of its
  // own binary at start that no mapping covers
  for (long i = 0; i < n; i++) {
    if (i > 0 && strcmp(list[i].path, list[i - 1].path) == 0) continue;
    int fd = open(list[i].path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue; // " (deleted)" and the like: only the cache stays
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
  }
  free(list);
  napi_value result;
  napi_create_double(env, n < 0 ? (double)n : bytes, &result);
  return result;
}

static napi_value FaultAroundOff(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value result;
  napi_create_double(env, (double)faultAroundOff, &result);
  return result;
}

// alsa-lib's snd_lib_error_handler_t (alsa/error.h, stable since 1.0)
typedef void (*alsa_error_handler)(const char* file, int line, const char* function, int err, const char* fmt, ...);
static _Atomic unsigned long alsa_underruns, alsa_overruns;
static atomic_int alsa_print_xruns;
static const char* (*alsa_strerror)(int);

// Called on whichever thread alsa-lib reports from (PortAudio's audio thread for an xrun): no allocation, no lock.
static void alsa_error(const char* file, int line, const char* function, int err, const char* fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  int xrun = 0;
  if (function && strcmp(function, "snd_pcm_recover") == 0) {  // pcm.c: SNDERR("%s occurred", s)
    if (strcmp(msg, "underrun occurred") == 0) xrun = 1, atomic_fetch_add(&alsa_underruns, 1);
    else if (strcmp(msg, "overrun occurred") == 0) xrun = 1, atomic_fetch_add(&alsa_overruns, 1);
  }
  if (xrun && !atomic_load(&alsa_print_xruns)) return;
  // alsa-lib's own format (error.c, snd_lib_error_default)
  if (err) fprintf(stderr, "ALSA lib %s:%i:(%s) %s: %s\n", file, line, function, msg, alsa_strerror ? alsa_strerror(err) : "error");
  else fprintf(stderr, "ALSA lib %s:%i:(%s) %s\n", file, line, function, msg);
}

// Whether this alsa-lib calls an error handler for its error messages: 1.2.15 and 1.2.15.1 sent them down their new
// log path only (1.2.15.2 called the handler again), so a handler there would count nothing while the lines print.
static int alsa_calls_handler(void* lib) {
  const char* (*version)(void) = (const char* (*)(void))dlsym(lib, "snd_asoundlib_version");
  const char* v = version ? version() : NULL;
  return !(v && (strcmp(v, "1.2.15") == 0 || strcmp(v, "1.2.15.1") == 0));
}

static napi_value CaptureAlsaXruns(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], result;
  bool print = false;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1 || napi_get_value_bool(env, argv[0], &print) != napi_ok) {
    napi_throw_type_error(env, NULL, "captureAlsaXruns(printThem: boolean)");
    return NULL;
  }
  atomic_store(&alsa_print_xruns, print ? 1 : 0);
  // only the alsa-lib already loaded (naudiodon's): never a second copy; never closed, its handler must stay
  void* lib = dlopen("libasound.so.2", RTLD_LAZY | RTLD_NOLOAD);
  int (*set_handler)(alsa_error_handler) = lib && alsa_calls_handler(lib) ? (int (*)(alsa_error_handler))dlsym(lib, "snd_lib_error_set_handler") : NULL;
  if (set_handler) {
    // node unloads an addon a worker thread loaded when the worker ends: the handler must stay mapped while set
    Dl_info self;
    if (dladdr((void*)alsa_error, &self) && self.dli_fname) dlopen(self.dli_fname, RTLD_LAZY | RTLD_NODELETE);
    alsa_strerror = (const char* (*)(int))dlsym(lib, "snd_strerror");
    // alsa-lib before 1.2.15 built without NDEBUG (Debian's) also points snd_err_msg, its debug messages that only
    // LIBASOUND_DEBUG prints ("PCM not set up", an unplugged card's failed ioctls), at the handler: kept as it was
    alsa_error_handler* debug_msg = (alsa_error_handler*)dlsym(lib, "snd_err_msg");
    alsa_error_handler kept = debug_msg ? *debug_msg : NULL;
    set_handler(alsa_error);
    if (debug_msg) *debug_msg = kept;
  }
  napi_get_boolean(env, set_handler != NULL, &result);
  return result;
}

static napi_value AlsaXruns(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value result, under, over;
  napi_create_object(env, &result);
  napi_create_double(env, (double)atomic_load(&alsa_underruns), &under);
  napi_create_double(env, (double)atomic_load(&alsa_overruns), &over);
  napi_set_named_property(env, result, "underruns", under);
  napi_set_named_property(env, result, "overruns", over);
  return result;
}

NAPI_MODULE_INIT() {
  napi_property_descriptor props[] = {
      {"dup", NULL, Dup, NULL, NULL, NULL, napi_default, NULL},
      {"dup2", NULL, Dup2, NULL, NULL, NULL, napi_default, NULL},
      {"sendDatagram", NULL, SendDatagram, NULL, NULL, NULL, napi_default, NULL},
      {"mallocTrim", NULL, MallocTrim, NULL, NULL, NULL, napi_default, NULL},
      {"pageOutFileMappings", NULL, PageOutFileMappings, NULL, NULL, NULL, napi_default, NULL},
      {"faultAroundOff", NULL, FaultAroundOff, NULL, NULL, NULL, napi_default, NULL},
      {"captureAlsaXruns", NULL, CaptureAlsaXruns, NULL, NULL, NULL, napi_default, NULL},
      {"alsaXruns", NULL, AlsaXruns, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  return exports;
}
