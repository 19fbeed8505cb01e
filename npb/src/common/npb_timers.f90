! Wall-clock timers indexed like NPB's (clear/start/stop/read), on omp_get_wtime.
module npb_timers
  use, intrinsic :: iso_fortran_env, only: real64
  use omp_lib, only: omp_get_wtime
  implicit none
  private
  public :: timer_clear, timer_start, timer_stop, timer_read, timers_enabled

  integer, parameter :: ntimers = 64
  real(real64), save :: elapsed(ntimers) = 0, started(ntimers) = 0

contains

  subroutine timer_clear(n)
    integer, intent(in) :: n
    elapsed(n) = 0
  end subroutine timer_clear

  subroutine timer_start(n)
    integer, intent(in) :: n
    started(n) = omp_get_wtime()
  end subroutine timer_start

  subroutine timer_stop(n)
    integer, intent(in) :: n
    elapsed(n) = elapsed(n) + (omp_get_wtime() - started(n))
  end subroutine timer_stop

  real(real64) function timer_read(n)
    integer, intent(in) :: n
    timer_read = elapsed(n)
  end function timer_read

  !> Detailed timers are on when ./timer.flag exists or NPB_TIMER_FLAG is set (as in NPB).
  logical function timers_enabled()
    character(len=32) :: val
    integer :: stat
    inquire(file='timer.flag', exist=timers_enabled)
    if (timers_enabled) return
    call get_environment_variable('NPB_TIMER_FLAG', val, status=stat)
    timers_enabled = (stat == 0 .and. len_trim(val) > 0 .and. val(1:1) /= '0' &
                      .and. val(1:1) /= 'n' .and. val(1:1) /= 'N' .and. val(1:1) /= 'f' &
                      .and. val(1:1) /= 'F')
  end function timers_enabled

end module npb_timers
