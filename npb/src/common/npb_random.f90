! The NPB pseudo-random stream: x(k+1) = a * x(k) mod 2**46, value = 2**-46 * x(k+1).
! State and multiplier travel as doubles (as in NPB's interface) but every product is
! computed exactly in 64-bit integers, split in 23-bit halves so nothing overflows.
module npb_random
  use, intrinsic :: iso_fortran_env, only: int64, real64
  implicit none
  private
  public :: randlc, vranlc, pow46, npb_seed, npb_mult

  real(real64), parameter :: npb_seed = 314159265.0_real64
  real(real64), parameter :: npb_mult = 1220703125.0_real64      ! 5**13
  integer(int64), parameter :: two23 = 2_int64**23, mask46 = 2_int64**46 - 1
  real(real64), parameter :: r46 = 0.5_real64**46

contains

  pure function mulmod46(a, x) result(y)
    integer(int64), intent(in) :: a, x
    integer(int64) :: y, a1, a2, x1, x2, t
    a1 = a / two23;  a2 = a - a1 * two23
    x1 = x / two23;  x2 = x - x1 * two23
    t = modulo(a1 * x2 + a2 * x1, two23)
    y = iand(t * two23 + a2 * x2, mask46)
  end function mulmod46

  !> Advance x by one draw and return the new value in (0,1).
  function randlc(x, a) result(r)
    real(real64), intent(inout) :: x
    real(real64), intent(in) :: a
    real(real64) :: r
    integer(int64) :: xi
    xi = mulmod46(int(a, int64), int(x, int64))
    x = real(xi, real64)
    r = r46 * x
  end function randlc

  !> Fill y(1:n) with the next n values of the stream, advancing x.
  subroutine vranlc(n, x, a, y)
    integer, intent(in) :: n
    real(real64), intent(inout) :: x
    real(real64), intent(in) :: a
    real(real64), intent(out) :: y(*)
    integer(int64) :: xi, ai
    integer :: i
    xi = int(x, int64);  ai = int(a, int64)
    do i = 1, n
      xi = mulmod46(ai, xi)
      y(i) = r46 * real(xi, real64)
    end do
    x = real(xi, real64)
  end subroutine vranlc

  !> a**n mod 2**46: the multiplier that jumps the stream ahead by n draws.
  function pow46(a, n) result(p)
    real(real64), intent(in) :: a
    integer(int64), intent(in) :: n
    real(real64) :: p
    integer(int64) :: q, base, acc
    acc = 1;  base = int(a, int64);  q = n
    do while (q > 0)
      if (iand(q, 1_int64) == 1) acc = mulmod46(base, acc)
      base = mulmod46(base, base)
      q = ishft(q, -1)
    end do
    p = real(acc, real64)
  end function pow46

end module npb_random
