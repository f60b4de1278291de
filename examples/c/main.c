/* pk from C: a device-wide sum through the C API, and what a bad call returns.
 *
 *   cmake -S examples/c -B build/example-c -DCMAKE_PREFIX_PATH=<pk prefix>
 *   cmake --build build/example-c && build/example-c/pk_example_c
 */
#include <pk/pk.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* Prints the failure and returns 1 from main. */
#define PK_CHECK(call)                                                                            \
  do {                                                                                            \
    pk_status pk_check_status_ = (call);                                                          \
    if (pk_check_status_ != PK_SUCCESS) {                                                         \
      fprintf(stderr, "%s: %s: %s\n", #call, pk_status_string(pk_check_status_), pk_last_error_message()); \
      return 1;                                                                                   \
    }                                                                                             \
  } while (0)

enum { n = 100000 };

int main(void) {
  static float host_x[n];
  double reference = 0, magnitude = 0;
  for (int i = 0; i < n; ++i) {
    host_x[i] = sinf((float)i);
    reference += host_x[i];
    magnitude += fabs(host_x[i]);
  }

  pk_stream_t s;
  PK_CHECK(pk_stream_default(&s));
  char where[256];
  PK_CHECK(pk_stream_describe(s, where, sizeof where, NULL));

  float* x;
  float* total;
  PK_CHECK(pk_malloc(s, sizeof host_x, (void**)&x));
  PK_CHECK(pk_malloc(s, sizeof(float), (void**)&total));
  PK_CHECK(pk_memcpy_h2d(s, x, host_x, sizeof host_x));

  const pk_tensor in = pk_tensor_1d(x, PK_DTYPE_F32, n);
  const pk_tensor out = pk_tensor_scalar(total, PK_DTYPE_F32);
  PK_CHECK(pk_reduce_sum(s, &in, &out));
  float sum;
  PK_CHECK(pk_memcpy_d2h(s, &sum, total, sizeof sum)); /* waits for the stream */

  /* fp32 accumulation error is bounded by n * eps * sum|x| for any summation order. */
  const double bound = (double)n * 0x1p-24 * magnitude;
  const double error = fabs((double)sum - reference);
  printf("pk %s on %s: sum = %.6f (reference %.6f, |error| %.2e, bound %.2e)\n", pk_version_string(), where,
         (double)sum, reference, error, bound);

  /* A bad call (the output has no memory) returns a status and a message; nothing aborts. */
  pk_tensor nowhere = out;
  nowhere.data = NULL;
  pk_status st = pk_reduce_sum(s, &in, &nowhere);
  printf("a bad call returns %s: %s\n", pk_status_string(st), pk_last_error_message());

  PK_CHECK(pk_free(s, x));
  PK_CHECK(pk_free(s, total));
  PK_CHECK(pk_stream_destroy(s));
  return error <= bound && st == PK_ERROR_INVALID_ARGUMENT ? EXIT_SUCCESS : EXIT_FAILURE;
}
