// AES-128-GCM for SRTP packets (RFC 7714), one call per packet, with the key schedule done once per session.
//
// Why: werift protects each RTP packet with node's crypto.createCipheriv/createDecipheriv. Each packet then
// imports the key, builds a cipher object, and makes four or five more calls through node's JS crypto layer.
// That cost about a point of one core in a two-way call on a 2-core VM (issue #5: <= 5 %), more than the AES
// itself. Here one context per key is reused: per packet only the IV is set, and the addon makes one call.
//
// OpenSSL is node's own: node exports its libcrypto symbols to addons (or links the system's libcrypto, whose
// symbols are then global as well). This file is a separate addon linked with -z now, so a node that did not
// provide them fails to load it, and werift's own path is used instead (index.js), instead of aborting mid-call.
//
//   gcmContext(key: Buffer(16)) -> context (an external; freed by the GC)
//   gcmSeal(ctx, iv: Buffer(12), aad: Buffer, plaintext: Buffer) -> Buffer aad || ciphertext || tag(16)
//   gcmOpen(ctx, iv: Buffer(12), packet: Buffer, aadLength) -> Buffer aad || plaintext, or null when the tag
//     (the last 16 bytes of packet) does not authenticate
#include <node_api.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TAG_LEN 16
#define IV_LEN 12
#define KEY_LEN 16

typedef struct {
  EVP_CIPHER_CTX* seal;
  EVP_CIPHER_CTX* open;
  unsigned char key[KEY_LEN];
} GcmContext;

static void free_context(napi_env env, void* data, void* hint) {
  (void)env;
  (void)hint;
  GcmContext* c = data;
  if (c->seal) EVP_CIPHER_CTX_free(c->seal);
  if (c->open) EVP_CIPHER_CTX_free(c->open);
  OPENSSL_cleanse(c->key, KEY_LEN);
  free(c);
}

static int buffer_arg(napi_env env, napi_value v, unsigned char** data, size_t* len) {
  bool is;
  return napi_is_buffer(env, v, &is) == napi_ok && is && napi_get_buffer_info(env, v, (void**)data, len) == napi_ok;
}

static GcmContext* context_arg(napi_env env, napi_value v) {
  napi_valuetype t;
  void* data;
  if (napi_typeof(env, v, &t) != napi_ok || t != napi_external) return NULL;
  if (napi_get_value_external(env, v, &data) != napi_ok) return NULL;
  return data;
}

static napi_value GcmContextNew(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], result;
  unsigned char* key;
  size_t keyLen;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1 || !buffer_arg(env, argv[0], &key, &keyLen)) {
    napi_throw_type_error(env, NULL, "gcmContext(key) expects a Buffer");
    return NULL;
  }
  if (keyLen != KEY_LEN) {
    napi_throw_range_error(env, NULL, "gcmContext(key): AES-128-GCM needs a 16-byte key");
    return NULL;
  }
  GcmContext* c = calloc(1, sizeof *c);
  if (!c) {
    napi_throw_error(env, NULL, "gcmContext: out of memory");
    return NULL;
  }
  memcpy(c->key, key, KEY_LEN);
  c->seal = EVP_CIPHER_CTX_new();
  c->open = EVP_CIPHER_CTX_new();
  // The key schedule happens here, once; per packet only the IV changes (EVP_*Init_ex with a NULL key).
  if (!c->seal || !c->open || EVP_EncryptInit_ex(c->seal, EVP_aes_128_gcm(), NULL, c->key, NULL) != 1 ||
      EVP_DecryptInit_ex(c->open, EVP_aes_128_gcm(), NULL, c->key, NULL) != 1) {
    free_context(env, c, NULL);
    napi_throw_error(env, NULL, "gcmContext: OpenSSL could not set up AES-128-GCM");
    return NULL;
  }
  if (napi_create_external(env, c, free_context, NULL, &result) != napi_ok) {
    free_context(env, c, NULL);
    napi_throw_error(env, NULL, "gcmContext: could not create the context object");
    return NULL;
  }
  return result;
}

/** Checks ctx and iv, the two arguments both calls share; throws and returns NULL when they are wrong. */
static GcmContext* common_args(napi_env env, const char* name, napi_value ctxArg, napi_value ivArg, unsigned char** iv) {
  GcmContext* c = context_arg(env, ctxArg);
  size_t ivLen;
  char text[96];
  if (!c) {
    snprintf(text, sizeof text, "%s: the first argument must be a context from gcmContext()", name);
    napi_throw_type_error(env, NULL, text);
    return NULL;
  }
  if (!buffer_arg(env, ivArg, iv, &ivLen) || ivLen != IV_LEN) {
    snprintf(text, sizeof text, "%s: the IV must be a 12-byte Buffer", name);
    napi_throw_range_error(env, NULL, text);
    return NULL;
  }
  return c;
}

static napi_value GcmSeal(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4], result;
  unsigned char *iv, *aad, *pt, *out;
  size_t aadLen, ptLen;
  int n;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 4) {
    napi_throw_type_error(env, NULL, "gcmSeal(ctx, iv, aad, plaintext) expects four arguments");
    return NULL;
  }
  GcmContext* c = common_args(env, "gcmSeal", argv[0], argv[1], &iv);
  if (!c) return NULL;
  if (!buffer_arg(env, argv[2], &aad, &aadLen) || !buffer_arg(env, argv[3], &pt, &ptLen) || aadLen > 0x7fffffff ||
      ptLen > 0x7fffffff) {
    napi_throw_type_error(env, NULL, "gcmSeal: aad and plaintext must be Buffers");
    return NULL;
  }
  if (napi_create_buffer(env, aadLen + ptLen + TAG_LEN, (void**)&out, &result) != napi_ok) return NULL;
  memcpy(out, aad, aadLen);
  if (EVP_EncryptInit_ex(c->seal, NULL, NULL, NULL, iv) != 1 ||
      (aadLen > 0 && EVP_EncryptUpdate(c->seal, NULL, &n, aad, (int)aadLen) != 1) ||
      (ptLen > 0 && EVP_EncryptUpdate(c->seal, out + aadLen, &n, pt, (int)ptLen) != 1) ||
      EVP_EncryptFinal_ex(c->seal, out + aadLen + ptLen, &n) != 1 ||
      EVP_CIPHER_CTX_ctrl(c->seal, EVP_CTRL_GCM_GET_TAG, TAG_LEN, out + aadLen + ptLen) != 1) {
    napi_throw_error(env, NULL, "gcmSeal: OpenSSL failed to encrypt");
    return NULL;
  }
  return result;
}

static napi_value GcmOpen(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4], result;
  unsigned char *iv, *packet, *out;
  size_t len;
  int64_t aadLen64;
  int n;
  napi_valuetype t;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 4) {
    napi_throw_type_error(env, NULL, "gcmOpen(ctx, iv, packet, aadLength) expects four arguments");
    return NULL;
  }
  GcmContext* c = common_args(env, "gcmOpen", argv[0], argv[1], &iv);
  if (!c) return NULL;
  if (!buffer_arg(env, argv[2], &packet, &len) || napi_typeof(env, argv[3], &t) != napi_ok || t != napi_number ||
      napi_get_value_int64(env, argv[3], &aadLen64) != napi_ok) {
    napi_throw_type_error(env, NULL, "gcmOpen: packet must be a Buffer and aadLength a number");
    return NULL;
  }
  if (len > 0x7fffffff || aadLen64 < 0 || (size_t)aadLen64 + TAG_LEN > len) {
    napi_throw_range_error(env, NULL, "gcmOpen: the packet is shorter than its header and tag");
    return NULL;
  }
  size_t aadLen = (size_t)aadLen64, ctLen = len - aadLen - TAG_LEN;
  if (napi_create_buffer(env, len - TAG_LEN, (void**)&out, &result) != napi_ok) return NULL;
  memcpy(out, packet, aadLen);
  if (EVP_DecryptInit_ex(c->open, NULL, NULL, NULL, iv) != 1 ||
      (aadLen > 0 && EVP_DecryptUpdate(c->open, NULL, &n, packet, (int)aadLen) != 1) ||
      (ctLen > 0 && EVP_DecryptUpdate(c->open, out + aadLen, &n, packet + aadLen, (int)ctLen) != 1) ||
      EVP_CIPHER_CTX_ctrl(c->open, EVP_CTRL_GCM_SET_TAG, TAG_LEN, packet + len - TAG_LEN) != 1) {
    napi_throw_error(env, NULL, "gcmOpen: OpenSSL failed to decrypt");
    return NULL;
  }
  if (EVP_DecryptFinal_ex(c->open, out + aadLen + ctLen, &n) != 1) {
    // Not authentic (tampered, or another key): the plaintext written so far must not be used.
    napi_get_null(env, &result);
  }
  return result;
}

NAPI_MODULE_INIT() {
  napi_property_descriptor props[] = {
      {"gcmContext", NULL, GcmContextNew, NULL, NULL, NULL, napi_enumerable, NULL},
      {"gcmSeal", NULL, GcmSeal, NULL, NULL, NULL, napi_enumerable, NULL},
      {"gcmOpen", NULL, GcmOpen, NULL, NULL, NULL, napi_enumerable, NULL},
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  return exports;
}
