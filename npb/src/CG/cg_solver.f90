! The timed part: one step of the inverse power method (conj_grad and the update of x).
! All loops run over each thread's row block from cg_team, the same rows it generated,
! so apart from the gathers of p and z in A*p and A*z every access stays on data the
! thread first touched.
module cg_solver
  use, intrinsic :: iso_fortran_env, only: real64
  use, intrinsic :: iso_c_binding, only: c_int, c_double
  use omp_lib, only: omp_get_thread_num
  use cg_params, only: cg_steps
  use cg_team, only: row_block, team_sum
  implicit none
  private
  public :: set_vectors, power_step

  interface
    !> Rows lo..hi of a sparse matrix times v, into out(lo:hi): out(j) is the sum of
    !> a(k) * v(colidx(k)) over row j's entries (cg_rows_times.c: the loop needs
    !> software prefetch, which Fortran cannot express).
    subroutine rows_times(lo, hi, rowstr, colidx, a, v, out) bind(C, name="cg_rows_times")
      import :: c_int, c_double
      integer(c_int), value :: lo, hi
      integer(c_int), intent(in) :: rowstr(*), colidx(*)
      real(c_double), intent(in) :: a(*), v(*)
      real(c_double), intent(inout) :: out(*)
    end subroutine rows_times
  end interface

  ! reduction slots (see team_sum for when a slot may be reused)
  integer, parameter :: slot_rho0 = 1, slot_pq = 2, slot_rho = 3, &
                        slot_res = 4, slot_xz = 5, slot_zz = 6

contains

  !> x = 1 and, unless only_x, z = p = q = r = 0, each thread on its own rows.
  subroutine set_vectors(na, x, z, p, q, r, only_x)
    integer, intent(in) :: na
    real(real64), intent(inout) :: x(na), z(na), p(na), q(na), r(na)
    logical, intent(in) :: only_x
    integer :: lo, hi, j
    !$omp parallel default(none) shared(na, x, z, p, q, r, only_x) private(lo, hi, j)
    call row_block(na, lo, hi)
    do j = lo, hi
      x(j) = 1
    end do
    if (.not. only_x) then
      do j = lo, hi
        z(j) = 0;  p(j) = 0;  q(j) = 0;  r(j) = 0
      end do
    end if
    !$omp end parallel
  end subroutine set_vectors

  !> conj_grad (cg_steps CG steps on A z = x from z = 0), then rnorm = ||x - A z||,
  !> xz = x.z and x = z / ||z||.
  subroutine power_step(na, rowstr, colidx, a, x, z, p, q, r, rnorm, xz)
    integer, intent(in) :: na, rowstr(na + 1), colidx(*)
    real(real64), intent(in) :: a(*)
    real(real64), intent(inout) :: x(na), z(na), p(na), q(na), r(na)
    real(real64), intent(out) :: rnorm, xz
    !$omp parallel default(none) shared(na, rowstr, colidx, a, x, z, p, q, r, rnorm, xz)
    call team_power_step(na, rowstr, colidx, a, x, z, p, q, r, rnorm, xz)
    !$omp end parallel
  end subroutine power_step

  !> One thread's share of power_step (contains barriers: every thread must call it).
  subroutine team_power_step(na, rowstr, colidx, a, x, z, p, q, r, rnorm, xz)
    integer, intent(in) :: na, rowstr(na + 1), colidx(*)
    real(real64), intent(in) :: a(*)
    real(real64), intent(inout) :: x(na), z(na), p(na), q(na), r(na)
    real(real64), intent(inout) :: rnorm, xz
    integer :: lo, hi, j, step
    real(real64) :: s, s2, s3, d, rho, rho_new, alpha, beta, res, xz_all, zz

    call row_block(na, lo, hi)
    s = 0
    do j = lo, hi
      z(j) = 0
      r(j) = x(j)
      p(j) = x(j)
      s = s + x(j) * x(j)
    end do
    rho = team_sum(slot_rho0, s)          ! its barrier also publishes p

    do step = 1, cg_steps
      ! q = A p, then p.q (q and p are this thread's rows, still in cache)
      call rows_times(lo, hi, rowstr, colidx, a, p, q)
      s = 0
      do j = lo, hi
        s = s + p(j) * q(j)
      end do
      alpha = rho / team_sum(slot_pq, s)
      ! z += alpha p, r -= alpha q, fused with r.r
      s = 0
      do j = lo, hi
        z(j) = z(j) + alpha * p(j)
        r(j) = r(j) - alpha * q(j)
        s = s + r(j) * r(j)
      end do
      rho_new = team_sum(slot_rho, s)
      beta = rho_new / rho
      rho = rho_new
      do j = lo, hi
        p(j) = r(j) + beta * p(j)
      end do
      !$omp barrier
    end do

    ! ||x - A z||, x.z and z.z in one sweep (r keeps A z, as in NPB)
    call rows_times(lo, hi, rowstr, colidx, a, z, r)
    s = 0;  s2 = 0;  s3 = 0
    do j = lo, hi
      d = x(j) - r(j)
      s = s + d * d
      s2 = s2 + x(j) * z(j)
      s3 = s3 + z(j) * z(j)
    end do
    res = team_sum(slot_res, s)
    xz_all = team_sum(slot_xz, s2)
    zz = team_sum(slot_zz, s3)
    zz = 1 / sqrt(zz)
    do j = lo, hi
      x(j) = zz * z(j)
    end do
    if (omp_get_thread_num() == 0) then
      rnorm = sqrt(res)
      xz = xz_all
    end if
  end subroutine team_power_step

end module cg_solver
