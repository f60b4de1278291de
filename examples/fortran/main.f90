! pk from Fortran: device-wide reductions (a sum without options, a reproducible sum with options, an
! argmax) and an attention call through the `pk` module (ISO_C_BINDING over the C API). The operation
! constants have C's names (PK_REDUCE_SUM, ...) and pk_reduce's options argument is optional.
!
!   cmake -S examples/fortran -B build/example-fortran -DCMAKE_PREFIX_PATH=<pk prefix>
!   cmake --build build/example-fortran && build/example-fortran/pk_example_fortran
program pk_example_fortran
  use, intrinsic :: iso_c_binding
  use pk
  implicit none
  integer(c_int64_t), parameter :: n = 100000
  real(c_float), target :: x(n), total, total_reproducible
  integer(c_int64_t), target :: at_max
  type(c_ptr) :: s, dx, dtotal, dindex
  type(pk_reduce_options) :: options
  character(len=:), allocatable :: description
  type(pk_tensor) :: tin, tout
  integer(c_int) :: st
  integer(c_size_t) :: bytes
  integer(c_int64_t) :: i
  real(c_double) :: reference, magnitude, bound
  ! Attention: [batch, seqlen, heads, head_dim] in C order; bf16 values held as their 16-bit patterns.
  integer(c_int64_t), parameter :: seqlen = 4, head_dim = 32, elems = seqlen * head_dim
  integer(c_int16_t), target :: zeros(elems), out(elems)
  real(c_float), target :: lse(seqlen)
  type(c_ptr) :: dqkv, dout, dlse
  type(pk_attention_args) :: args
  logical :: attention_ok, reductions_ok

  do i = 1, n
    x(i) = sin(real(i, c_float))
  end do
  reference = sum(real(x, c_double))
  magnitude = sum(abs(real(x, c_double)))

  call check(pk_stream_create_host("RTX 3090", s), "pk_stream_create_host")
  call check(pk_stream_describe(s, description), "pk_stream_describe")
  print '(a, a)', 'stream: ', description
  bytes = int(n, c_size_t) * c_sizeof(total)
  call check(pk_malloc(s, bytes, dx), "pk_malloc")
  call check(pk_malloc(s, c_sizeof(total), dtotal), "pk_malloc")
  call check(pk_memcpy_h2d(s, dx, c_loc(x), bytes), "pk_memcpy_h2d")

  tin = pk_tensor_1d(dx, PK_DTYPE_F32, n)
  tout = pk_tensor_scalar(dtotal, PK_DTYPE_F32)
  call check(pk_reduce(s, PK_REDUCE_SUM, tin, tout), "pk_reduce(PK_REDUCE_SUM)")
  call check(pk_memcpy_d2h(s, c_loc(total), dtotal, c_sizeof(total)), "pk_memcpy_d2h")
  ! The same sum in the reproducible mode (options given), and the first index of the maximum.
  options%reproducible = 1
  call check(pk_reduce(s, PK_REDUCE_SUM, tin, tout, options), "pk_reduce(PK_REDUCE_SUM, reproducible)")
  call check(pk_memcpy_d2h(s, c_loc(total_reproducible), dtotal, c_sizeof(total)), "pk_memcpy_d2h")
  call check(pk_malloc(s, c_sizeof(at_max), dindex), "pk_malloc")
  call check(pk_reduce(s, PK_REDUCE_ARGMAX, tin, pk_tensor_scalar(dindex, PK_DTYPE_I64)), "pk_reduce(PK_REDUCE_ARGMAX)")
  call check(pk_memcpy_d2h(s, c_loc(at_max), dindex, c_sizeof(at_max)), "pk_memcpy_d2h")
  call check(pk_free(s, dindex), "pk_free")
  ! C indices start at 0: maxloc's index - 1.
  reductions_ok = at_max == maxloc(x, 1) - 1 .and. len(description) > 0

  ! fp32 accumulation error is bounded by n * eps * sum|x| for any summation order.
  bound = real(n, c_double) * epsilon(1.0_c_float) / 2 * magnitude
  print '(a, f14.6, a, f14.6, a, es9.2)', 'reduce_sum on the emulated RTX 3090: ', total, &
    '  (reference ', reference, '), bound ', bound
  print '(a, f14.6, a, i0)', 'reproducible sum: ', total_reproducible, ', argmax (0-based): ', at_max
  reductions_ok = reductions_ok .and. abs(real(total_reproducible, c_double) - reference) <= bound

  ! A bad call returns a status and a message; nothing is thrown or aborted.
  st = pk_reduce(s, PK_REDUCE_SUM, tin, pk_tensor_scalar(c_null_ptr, PK_DTYPE_F32))
  print '(a, a, a, a)', 'a bad call returns ', pk_status_name(st), ': ', pk_last_error()

  ! Attention with q = k = v = 0: equal scores, so every output is 0 and LSE = log(seqlen). The
  ! output starts as NaN patterns (all bits set) to show it is written.
  zeros = 0_c_int16_t
  out = -1_c_int16_t
  bytes = int(elems, c_size_t) * c_sizeof(zeros(1))
  call check(pk_malloc(s, bytes, dqkv), "pk_malloc")
  call check(pk_malloc(s, bytes, dout), "pk_malloc")
  call check(pk_malloc(s, int(seqlen, c_size_t) * c_sizeof(lse(1)), dlse), "pk_malloc")
  call check(pk_memcpy_h2d(s, dqkv, c_loc(zeros), bytes), "pk_memcpy_h2d")
  call check(pk_memcpy_h2d(s, dout, c_loc(out), bytes), "pk_memcpy_h2d")
  args%q = pk_tensor_contiguous(dqkv, PK_DTYPE_BF16, [1_c_int64_t, seqlen, 1_c_int64_t, head_dim])
  args%k = args%q
  args%v = args%q
  args%out = pk_tensor_contiguous(dout, PK_DTYPE_BF16, [1_c_int64_t, seqlen, 1_c_int64_t, head_dim])
  args%lse = dlse
  args%causal = 1
  call check(pk_attention_forward(s, args), "pk_attention_forward")
  call check(pk_memcpy_d2h(s, c_loc(out), dout, bytes), "pk_memcpy_d2h")
  call check(pk_memcpy_d2h(s, c_loc(lse), dlse, int(seqlen, c_size_t) * c_sizeof(lse(1))), "pk_memcpy_d2h")
  ! Causal: query i sees keys 0..i, so LSE(i) = log(i + 1). fp32 evaluation: a few ulps.
  attention_ok = all(out == 0)
  do i = 1, seqlen
    attention_ok = attention_ok .and. abs(lse(i) - log(real(i, c_float))) <= 8 * epsilon(1.0_c_float)
  end do
  print '(a, l1, a, 4f9.5)', 'attention [1, 4, 1, 32] causal on zeros: output all 0: ', all(out == 0), &
    ', lse ', lse
  call check(pk_free(s, dqkv), "pk_free")
  call check(pk_free(s, dout), "pk_free")
  call check(pk_free(s, dlse), "pk_free")

  call check(pk_free(s, dx), "pk_free")
  call check(pk_free(s, dtotal), "pk_free")
  call check(pk_stream_destroy(s), "pk_stream_destroy")
  if (abs(real(total, c_double) - reference) > bound .or. st /= PK_ERROR_INVALID_ARGUMENT .or. .not. attention_ok &
      .or. .not. reductions_ok) error stop 1

contains

  subroutine check(status, what)
    integer(c_int), intent(in) :: status
    character(len=*), intent(in) :: what
    if (status /= PK_SUCCESS) then
      print '(a, a, a, a, a)', what, ': ', pk_status_name(status), ': ', pk_last_error()
      error stop 1
    end if
  end subroutine

end program
