! The thread team's row partition and its reductions.
!
! Every loop over rows (matrix generation, vector set-up, the timed solver) takes its
! rows from row_block, so the thread that first writes a row's data is the one that
! uses it in the timed loops (first-touch placement). Reductions go through per-thread
! slots summed in thread order: deterministic for a given thread count, and every
! thread gets the total without a shared accumulator that would need resetting.
module cg_team
  use, intrinsic :: iso_fortran_env, only: real64
  use omp_lib, only: omp_get_max_threads, omp_get_num_threads, omp_get_thread_num
  implicit none
  private
  public :: team_setup, row_block, team_sum, team_prefix, max_slots

  integer, parameter :: max_slots = 16   ! 128 bytes per thread: no false sharing
  real(real64), allocatable :: partial(:,:)

contains

  !> Allocate the reduction slots; call before the first parallel region.
  subroutine team_setup()
    if (allocated(partial)) deallocate(partial)
    allocate(partial(max_slots, 0:omp_get_max_threads() - 1))
    partial = 0
  end subroutine team_setup

  !> Rows lo..hi of 1..n for the calling thread: contiguous blocks, the first
  !> mod(n, nt) threads one row longer (the split of a static OpenMP schedule).
  subroutine row_block(n, lo, hi)
    integer, intent(in) :: n
    integer, intent(out) :: lo, hi
    integer :: nt, t, q, rem
    nt = omp_get_num_threads();  t = omp_get_thread_num()
    q = n / nt;  rem = mod(n, nt)
    lo = t * q + min(t, rem) + 1
    hi = lo + q - 1
    if (t < rem) hi = hi + 1
  end subroutine row_block

  !> Sum of value over the team (contains a barrier). A slot may be reused only
  !> after another barrier has passed, which every caller's loop structure ensures.
  function team_sum(slot, value) result(total)
    integer, intent(in) :: slot
    real(real64), intent(in) :: value
    real(real64) :: total
    integer :: t
    partial(slot, omp_get_thread_num()) = value
    !$omp barrier
    total = 0
    do t = 0, omp_get_num_threads() - 1
      total = total + partial(slot, t)
    end do
  end function team_sum

  !> Exclusive prefix sum of an integer count over the thread order, and the total
  !> (contains a barrier): where each thread's block starts in a packed array.
  subroutine team_prefix(slot, count, before, total)
    integer, intent(in) :: slot
    integer, intent(in) :: count
    integer, intent(out) :: before, total
    integer :: t, me
    me = omp_get_thread_num()
    partial(slot, me) = real(count, real64)      ! exact: counts are far below 2**53
    !$omp barrier
    before = 0;  total = 0
    do t = 0, omp_get_num_threads() - 1
      if (t < me) before = before + nint(partial(slot, t))
      total = total + nint(partial(slot, t))
    end do
  end subroutine team_prefix

end module cg_team
