! The right-hand side v of MG (NPB's zran3): the finest interior is filled with the
! random stream in natural order, then v = +1 at the 10 largest values, -1 at the 10
! smallest, 0 elsewhere.
!
! Each thread fills its own planes (the static partition of mg_grid), jumping ahead in
! the stream to the plane's first draw, so v does not depend on the thread count.
module mg_rhs
  use, intrinsic :: iso_fortran_env, only: int64
  use mg_grid
  use npb_random, only: randlc, vranlc, pow46, npb_seed, npb_mult
  implicit none
  private
  public :: make_rhs

  integer, parameter :: nsel = 10
  ! The selections merged over all threads (shared), values sorted best first. The
  ! smallest values are kept as the largest of -v, so one routine serves both.
  real(dp), save :: top_val(nsel), bot_val(nsel)
  integer, save :: top_pos(3, nsel), bot_pos(3, nsel)

contains

  !> Build v on the finest grid (m = n + 2). Orphaned: call from every thread.
  subroutine make_rhs(v, m)
    integer, intent(in) :: m
    real(dp), intent(inout) :: v(m, m, m)
    real(dp) :: x, dummy, my_top(nsel), my_bot(nsel)
    integer :: my_top_pos(3, nsel), my_bot_pos(3, nsel)
    integer :: i, j, k, n, p

    n = m - 2
    !$omp single
    top_val = -huge(1.0_dp);  bot_val = -huge(1.0_dp)
    top_pos = 0;  bot_pos = 0
    !$omp end single
    my_top = -huge(1.0_dp);  my_bot = -huge(1.0_dp)
    my_top_pos = 0;  my_bot_pos = 0

    !$omp do schedule(static)
    do k = 2, m - 1
      ! The value at interior offset (i,j,k) (0-based) is draw 1 + i + n*j + n*n*k.
      x = npb_seed
      dummy = randlc(x, pow46(npb_mult, int(n, int64)**2 * (k - 2)))
      do j = 2, m - 1
        call vranlc(n, x, npb_mult, v(2:m-1, j, k))
      end do
    end do
    !$omp end do nowait
    ! The search for the extremes is a pass of its own over v, as in NPB (nowait above:
    ! the same static split gives each thread the planes it has just written).
    !$omp do schedule(static)
    do k = 2, m - 1
      do j = 2, m - 1
        do i = 2, m - 1
          if (v(i, j, k) > my_top(nsel)) call keep_largest(my_top, my_top_pos, v(i, j, k), i, j, k)
          if (-v(i, j, k) > my_bot(nsel)) call keep_largest(my_bot, my_bot_pos, -v(i, j, k), i, j, k)
        end do
      end do
    end do
    !$omp end do nowait

    ! The stream has no repeated values, so the merge order cannot change the result.
    !$omp critical (mg_rhs_merge)
    do p = 1, nsel
      call keep_largest(top_val, top_pos, my_top(p), my_top_pos(1, p), my_top_pos(2, p), &
                        my_top_pos(3, p))
      call keep_largest(bot_val, bot_pos, my_bot(p), my_bot_pos(1, p), my_bot_pos(2, p), &
                        my_bot_pos(3, p))
    end do
    !$omp end critical (mg_rhs_merge)
    !$omp barrier

    call zero_grid(v, m)
    !$omp single
    do p = 1, nsel
      v(top_pos(1, p), top_pos(2, p), top_pos(3, p)) = 1
      v(bot_pos(1, p), bot_pos(2, p), bot_pos(3, p)) = -1
    end do
    !$omp end single
    call fill_ghosts(v, m)
  end subroutine make_rhs

  !> Insert x at (i,j,k) into the descending list val if it is among the nsel largest.
  pure subroutine keep_largest(val, pos, x, i, j, k)
    real(dp), intent(inout) :: val(nsel)
    integer, intent(inout) :: pos(3, nsel)
    real(dp), intent(in) :: x
    integer, intent(in) :: i, j, k
    integer :: p
    if (x <= val(nsel)) return
    p = nsel
    do while (p > 1)
      if (val(p - 1) >= x) exit
      val(p) = val(p - 1)
      pos(:, p) = pos(:, p - 1)
      p = p - 1
    end do
    val(p) = x
    pos(:, p) = [i, j, k]
  end subroutine keep_largest

end module mg_rhs
