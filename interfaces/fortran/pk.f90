! pk: Fortran 2008 bindings (ISO_C_BINDING) over the C API (pk/pk.h).
!
!   use pk
!   type(c_ptr) :: s, x, total
!   real(c_float), target :: host_x(n), host_total
!   type(pk_tensor) :: tin, tout
!   integer(c_int) :: st
!   st = pk_stream_default(s)
!   st = pk_malloc(s, int(n, c_size_t) * c_sizeof(host_total), x)
!   st = pk_memcpy_h2d(s, x, c_loc(host_x), int(n, c_size_t) * c_sizeof(host_total))
!   tin = pk_tensor_1d(x, PK_DTYPE_F32, int(n, c_int64_t))
!   ...
!   st = pk_reduce(s, PK_REDUCE_SUM, tin, tout)            ! options: optional, as C's NULL
!   if (st /= PK_SUCCESS) print *, pk_status_name(st), ': ', pk_last_error()
!
! Every function returns an integer(c_int) status (PK_SUCCESS = 0); pk_last_error() gives the message
! of the last failed call on this thread. Handles and device pointers are type(c_ptr).
!
! Names are C's. Fortran names are case-insensitive, so the operation constants PK_REDUCE_SUM ...
! PK_REDUCE_ARGMAX and C's per-operation functions pk_reduce_sum ... pk_reduce_argmax cannot both
! exist here: the module keeps the constants (as in C) and offers the operations through
! pk_reduce(stream, op, in, out [, options]).
module pk
  use, intrinsic :: iso_c_binding
  implicit none
  private

  ! Status codes (pk_status).
  integer(c_int), parameter, public :: PK_SUCCESS = 0
  integer(c_int), parameter, public :: PK_ERROR_INVALID_ARGUMENT = 1
  integer(c_int), parameter, public :: PK_ERROR_UNSUPPORTED = 2
  integer(c_int), parameter, public :: PK_ERROR_OUT_OF_MEMORY = 3
  integer(c_int), parameter, public :: PK_ERROR_BACKEND = 4
  integer(c_int), parameter, public :: PK_ERROR_EMULATION = 5
  integer(c_int), parameter, public :: PK_ERROR_NOT_FOUND = 6
  integer(c_int), parameter, public :: PK_ERROR_INTERNAL = 7

  ! Element types (pk_dtype).
  integer(c_int32_t), parameter, public :: PK_DTYPE_F32 = 0
  integer(c_int32_t), parameter, public :: PK_DTYPE_F64 = 1
  integer(c_int32_t), parameter, public :: PK_DTYPE_F16 = 2
  integer(c_int32_t), parameter, public :: PK_DTYPE_BF16 = 3
  integer(c_int32_t), parameter, public :: PK_DTYPE_I32 = 4
  integer(c_int32_t), parameter, public :: PK_DTYPE_I64 = 5
  integer(c_int32_t), parameter, public :: PK_DTYPE_I8 = 6
  integer(c_int32_t), parameter, public :: PK_DTYPE_U8 = 7
  integer(c_int32_t), parameter, public :: PK_DTYPE_F8E4M3FN = 8
  integer(c_int32_t), parameter, public :: PK_DTYPE_F8E4M3FNUZ = 9

  ! Reduction operations (pk_reduce_op), with C's names.
  integer(c_int), parameter, public :: PK_REDUCE_SUM = 0
  integer(c_int), parameter, public :: PK_REDUCE_PROD = 1
  integer(c_int), parameter, public :: PK_REDUCE_MIN = 2
  integer(c_int), parameter, public :: PK_REDUCE_MAX = 3
  integer(c_int), parameter, public :: PK_REDUCE_ARGMIN = 4
  integer(c_int), parameter, public :: PK_REDUCE_ARGMAX = 5

  ! Copy directions (pk_memcpy_kind).
  integer(c_int), parameter, public :: PK_MEMCPY_HOST_TO_DEVICE = 0
  integer(c_int), parameter, public :: PK_MEMCPY_DEVICE_TO_HOST = 1
  integer(c_int), parameter, public :: PK_MEMCPY_DEVICE_TO_DEVICE = 2

  ! Highest rank of a descriptor (PK_MAX_RANK).
  integer, parameter, public :: PK_MAX_RANK = 8

  ! Tensor descriptor (pk_tensor): shape and strides in elements, in C (row-major) dimension order:
  ! shape(1) is the slowest dimension. A Fortran array a(n1, n2) is the C tensor [n2][n1].
  type, bind(c), public :: pk_tensor
    type(c_ptr) :: data = c_null_ptr
    integer(c_int32_t) :: dtype = PK_DTYPE_F32
    integer(c_int32_t) :: rank = 0
    integer(c_int64_t) :: shape(PK_MAX_RANK) = 0
    integer(c_int64_t) :: strides(PK_MAX_RANK) = 0
  end type pk_tensor

  ! Reduction options (pk_reduce_options); a default-initialized value is C's pk_reduce_options_default().
  type, bind(c), public :: pk_reduce_options
    integer(c_int32_t) :: reproducible = 0
    type(c_ptr) :: policy = c_null_ptr  ! NUL-terminated candidate name, or null: the planner's choice
  end type pk_reduce_options

  ! Attention forward arguments (pk_attention_args), with the C defaults.
  type, bind(c), public :: pk_attention_args
    type(pk_tensor) :: q, k, v, out
    type(c_ptr) :: lse = c_null_ptr
    real(c_float) :: softmax_scale = 0
    integer(c_int32_t) :: causal = 0
    integer(c_int32_t) :: window_left = -1
    integer(c_int32_t) :: window_right = -1
    type(c_ptr) :: cu_seqlens_q = c_null_ptr
    type(c_ptr) :: cu_seqlens_k = c_null_ptr
    integer(c_int32_t) :: varlen_batch = 0
    integer(c_int32_t) :: max_seqlen_q = 0
    integer(c_int32_t) :: max_seqlen_k = 0
    type(c_ptr) :: policy = c_null_ptr  ! NUL-terminated candidate name, or null: the planner's choice
  end type pk_attention_args

  ! A KV cache (pk_kv_cache): paged (block_table%data set: PK_DTYPE_I32, rank 2 [batch, max_pages_per_seq])
  ! or contiguous (block_table%data null). pk.h states the argument rules.
  type, bind(c), public :: pk_kv_cache
    ! k, v: paged [num_pages, page_size, heads_kv, head_dim]; contiguous [batch, capacity, heads_kv, head_dim]
    type(pk_tensor) :: k, v
    type(pk_tensor) :: block_table
    type(c_ptr) :: seqlens = c_null_ptr  ! device int32 [batch]
    type(c_ptr) :: k_scale = c_null_ptr  ! FP8 caches: device fp32 [heads_kv] (null: 1.0)
    type(c_ptr) :: v_scale = c_null_ptr
  end type pk_kv_cache

  ! Decode arguments (pk_decode_args), with the C defaults (pk_decode_args_default()).
  type, bind(c), public :: pk_decode_args
    type(pk_tensor) :: q, out            ! [batch, seqlen_q, heads_q, head_dim], seqlen_q 1..16
    type(pk_kv_cache) :: cache
    type(c_ptr) :: lse = c_null_ptr      ! optional fp32 [batch, heads_q, seqlen_q]
    real(c_float) :: softmax_scale = 0
    integer(c_int32_t) :: causal = 0
    integer(c_int32_t) :: window_left = -1
    integer(c_int32_t) :: window_right = -1
    integer(c_int32_t) :: num_splits = 0  ! 0: the planner's; else 1..512
    integer(c_int32_t) :: max_seqlen_k = 0  ! the longest sequence (planner's split count); 0: the capacity
    type(c_ptr) :: error = c_null_ptr    ! optional device int32, set to 1 when a GPU kernel finds a bad slot
    type(c_ptr) :: policy = c_null_ptr   ! NUL-terminated candidate name, or null: the plan's choice
  end type pk_decode_args

  ! Cache append arguments (pk_kv_append_args), with the C defaults (pk_kv_append_args_default()).
  type, bind(c), public :: pk_kv_append_args
    type(pk_kv_cache) :: cache
    type(pk_tensor) :: k_new, v_new      ! [batch, new_tokens, heads_kv, head_dim]
    type(c_ptr) :: error = c_null_ptr
  end type pk_kv_append_args

  public :: pk_stream_create_host, pk_stream_create_cuda, pk_stream_create_hip, pk_stream_default
  public :: pk_stream_destroy, pk_stream_synchronize, pk_stream_describe
  public :: pk_malloc, pk_free, pk_memcpy_h2d, pk_memcpy_d2h, pk_memcpy_d2d, pk_memcpy_async
  public :: pk_reduce
  public :: pk_softmax, pk_attention_forward, pk_attention_decode, pk_kv_cache_append
  public :: pk_tensor_scalar, pk_tensor_1d, pk_tensor_contiguous
  public :: pk_last_error, pk_status_name

  interface
    integer(c_int) function pk_stream_create_host_c(device_name, stream) bind(c, name="pk_stream_create_host")
      import :: c_int, c_char, c_ptr
      character(kind=c_char), intent(in) :: device_name(*)
      type(c_ptr), intent(out) :: stream
    end function

    integer(c_int) function pk_stream_create_cuda(native_stream, ordinal, stream) bind(c, name="pk_stream_create_cuda")
      import :: c_int, c_ptr
      type(c_ptr), value :: native_stream
      integer(c_int), value :: ordinal
      type(c_ptr), intent(out) :: stream
    end function

    integer(c_int) function pk_stream_create_hip(native_stream, ordinal, stream) bind(c, name="pk_stream_create_hip")
      import :: c_int, c_ptr
      type(c_ptr), value :: native_stream
      integer(c_int), value :: ordinal
      type(c_ptr), intent(out) :: stream
    end function

    integer(c_int) function pk_stream_default(stream) bind(c, name="pk_stream_default")
      import :: c_int, c_ptr
      type(c_ptr), intent(out) :: stream
    end function

    integer(c_int) function pk_stream_destroy(stream) bind(c, name="pk_stream_destroy")
      import :: c_int, c_ptr
      type(c_ptr), value :: stream
    end function

    integer(c_int) function pk_stream_synchronize(stream) bind(c, name="pk_stream_synchronize")
      import :: c_int, c_ptr
      type(c_ptr), value :: stream
    end function

    integer(c_int) function pk_malloc(stream, bytes, ptr) bind(c, name="pk_malloc")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: stream
      integer(c_size_t), value :: bytes
      type(c_ptr), intent(out) :: ptr
    end function

    integer(c_int) function pk_free(stream, ptr) bind(c, name="pk_free")
      import :: c_int, c_ptr
      type(c_ptr), value :: stream
      type(c_ptr), value :: ptr
    end function

    integer(c_int) function pk_memcpy_h2d(stream, device_dst, host_src, bytes) bind(c, name="pk_memcpy_h2d")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: stream, device_dst, host_src
      integer(c_size_t), value :: bytes
    end function

    integer(c_int) function pk_memcpy_d2h(stream, host_dst, device_src, bytes) bind(c, name="pk_memcpy_d2h")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: stream, host_dst, device_src
      integer(c_size_t), value :: bytes
    end function

    integer(c_int) function pk_memcpy_d2d(stream, device_dst, device_src, bytes) bind(c, name="pk_memcpy_d2d")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: stream, device_dst, device_src
      integer(c_size_t), value :: bytes
    end function

    integer(c_int) function pk_memcpy_async(stream, dst, src, bytes, direction) bind(c, name="pk_memcpy_async")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: stream, dst, src
      integer(c_size_t), value :: bytes
      integer(c_int), value :: direction
    end function

    integer(c_int) function pk_stream_describe_c(stream, buf, capacity, length) bind(c, name="pk_stream_describe")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: stream, buf
      integer(c_size_t), value :: capacity
      integer(c_size_t), intent(out) :: length
    end function

    ! op: PK_REDUCE_SUM ... PK_REDUCE_ARGMAX. options may be left out: C receives NULL, the defaults
    ! (pk_reduce_options_default()).
    integer(c_int) function pk_reduce(stream, op, tensor_in, tensor_out, options) bind(c, name="pk_reduce")
      import :: c_int, c_ptr, pk_tensor, pk_reduce_options
      type(c_ptr), value :: stream
      integer(c_int), value :: op
      type(pk_tensor), intent(in) :: tensor_in, tensor_out
      type(pk_reduce_options), intent(in), optional :: options
    end function

    ! x, y: [rows, cols] in C order (a Fortran array y(cols, rows) holds one row per column).
    integer(c_int) function pk_softmax(stream, x, y) bind(c, name="pk_softmax")
      import :: c_int, c_ptr, pk_tensor
      type(c_ptr), value :: stream
      type(pk_tensor), intent(in) :: x, y
    end function

    integer(c_int) function pk_attention_forward(stream, args) bind(c, name="pk_attention_forward")
      import :: c_int, c_ptr, pk_attention_args
      type(c_ptr), value :: stream
      type(pk_attention_args), intent(in) :: args
    end function

    integer(c_int) function pk_attention_decode(stream, args) bind(c, name="pk_attention_decode")
      import :: c_int, c_ptr, pk_decode_args
      type(c_ptr), value :: stream
      type(pk_decode_args), intent(in) :: args
    end function

    integer(c_int) function pk_kv_cache_append(stream, args) bind(c, name="pk_kv_cache_append")
      import :: c_int, c_ptr, pk_kv_append_args
      type(c_ptr), value :: stream
      type(pk_kv_append_args), intent(in) :: args
    end function

    type(c_ptr) function pk_last_error_message_c() bind(c, name="pk_last_error_message")
      import :: c_ptr
    end function

    type(c_ptr) function pk_status_string_c(status) bind(c, name="pk_status_string")
      import :: c_ptr, c_int
      integer(c_int), value :: status
    end function

    integer(c_size_t) function strlen_c(s) bind(c, name="strlen")
      import :: c_ptr, c_size_t
      type(c_ptr), value :: s
    end function
  end interface

contains

  ! The emulator impersonating device_name (an archdb name or alias, e.g. "RTX 3090").
  integer(c_int) function pk_stream_create_host(device_name, stream)
    character(len=*), intent(in) :: device_name
    type(c_ptr), intent(out) :: stream
    pk_stream_create_host = pk_stream_create_host_c(trim(device_name) // c_null_char, stream)
  end function

  ! "host_sm80 impersonating RTX 3090", ... (C's pk_stream_describe) into an allocated string.
  integer(c_int) function pk_stream_describe(stream, description)
    type(c_ptr), intent(in) :: stream
    character(len=:), allocatable, intent(out) :: description
    character(kind=c_char), allocatable, target :: buf(:)
    integer(c_size_t) :: length, written, i
    description = ''
    pk_stream_describe = pk_stream_describe_c(stream, c_null_ptr, 0_c_size_t, length)
    if (pk_stream_describe /= PK_SUCCESS) return
    allocate(buf(length + 1))
    pk_stream_describe = pk_stream_describe_c(stream, c_loc(buf), length + 1, written)
    if (pk_stream_describe /= PK_SUCCESS) return
    deallocate(description)
    allocate(character(len=length) :: description)
    do i = 1, length
      description(i:i) = buf(i)
    end do
  end function

  type(pk_tensor) function pk_tensor_scalar(data, dtype)
    type(c_ptr), intent(in) :: data
    integer(c_int32_t), intent(in) :: dtype
    pk_tensor_scalar%data = data
    pk_tensor_scalar%dtype = dtype
    pk_tensor_scalar%rank = 0
  end function

  type(pk_tensor) function pk_tensor_1d(data, dtype, n)
    type(c_ptr), intent(in) :: data
    integer(c_int32_t), intent(in) :: dtype
    integer(c_int64_t), intent(in) :: n
    pk_tensor_1d%data = data
    pk_tensor_1d%dtype = dtype
    pk_tensor_1d%rank = 1
    pk_tensor_1d%shape(1) = n
    pk_tensor_1d%strides(1) = 1
  end function

  ! Row-major (C order) descriptor of the given shape, slowest dimension first.
  type(pk_tensor) function pk_tensor_contiguous(data, dtype, shape)
    type(c_ptr), intent(in) :: data
    integer(c_int32_t), intent(in) :: dtype
    integer(c_int64_t), intent(in) :: shape(:)
    integer :: k
    integer(c_int64_t) :: stride
    pk_tensor_contiguous%data = data
    pk_tensor_contiguous%dtype = dtype
    pk_tensor_contiguous%rank = int(size(shape), c_int32_t)
    stride = 1
    do k = size(shape), 1, -1
      pk_tensor_contiguous%shape(k) = shape(k)
      pk_tensor_contiguous%strides(k) = stride
      stride = stride * shape(k)
    end do
  end function

  ! Converts a NUL-terminated C string to a Fortran string.
  function from_c_string(p) result(s)
    type(c_ptr), intent(in) :: p
    character(len=:), allocatable :: s
    character(kind=c_char), pointer :: chars(:)
    integer(c_size_t) :: n, i
    if (.not. c_associated(p)) then
      s = ''
      return
    end if
    n = strlen_c(p)
    call c_f_pointer(p, chars, [n])
    allocate(character(len=n) :: s)
    do i = 1, n
      s(i:i) = chars(i)
    end do
  end function

  ! The message of the last failed pk call on this thread.
  function pk_last_error() result(message)
    character(len=:), allocatable :: message
    message = from_c_string(pk_last_error_message_c())
  end function

  ! "success", "invalid_argument", ...
  function pk_status_name(status) result(name)
    integer(c_int), intent(in) :: status
    character(len=:), allocatable :: name
    name = from_c_string(pk_status_string_c(status))
  end function

end module pk
