! Grid levels of the MG V-cycle and the whole-grid operations on them: zeroing and the
! periodic ghost copy.
!
! Data placement follows NPB's OpenMP version: every grid is split among threads by its
! axis-3 planes with a static schedule over the interior planes 2..m-1, which is how all
! operators (residual, smoother, restriction, norm, ghost copy) traverse it. The two
! axis-3 ghost planes are split by axis-2 rows, as the axis-3 ghost copy splits them.
! zero_grid uses exactly these partitions, so the first write of a page comes from the
! thread that works on it later.
!
! The routines with worksharing directives are orphaned: call them from every thread of
! a parallel region (or outside any region, where they run serially).
module mg_grid
  use, intrinsic :: iso_fortran_env, only: dp => real64
  implicit none
  private
  public :: dp, grid_level, zero_grid, zero_grid_serial, fill_ghosts, fill_ghosts_line, &
            fill_ghosts_plane, fill_ghosts_axis3, static_share

  !> One level k of the hierarchy: n = 2**k interior points per axis, stored with one
  !> ghost layer on each side (m = n + 2; interior indices 2..m-1).
  type :: grid_level
    integer :: n = 0, m = 0
    real(dp), allocatable :: u(:,:,:)   ! correction (the solution on the finest level)
    real(dp), allocatable :: r(:,:,:)   ! residual
  end type grid_level

contains

  !> z = 0 with the operators' thread partition (this is the first touch of every grid).
  subroutine zero_grid(z, m)
    integer, intent(in) :: m
    real(dp), intent(inout) :: z(m, m, m)
    integer :: j, k
    !$omp do schedule(static)
    do k = 2, m - 1
      z(:, :, k) = 0
    end do
    !$omp end do nowait
    !$omp do schedule(static)
    do j = 1, m
      z(:, j, 1) = 0
      z(:, j, m) = 0
    end do
    !$omp end do
  end subroutine zero_grid

  !> lo..hi: the calling thread's share of the planes first..last under the static
  !> schedule every operator uses (lo > hi: none), for sweeps that order their planes
  !> themselves. No barrier.
  subroutine static_share(first, last, lo, hi)
    integer, intent(in) :: first, last
    integer, intent(out) :: lo, hi
    integer :: k
    lo = last + 1;  hi = first - 1
    !$omp do schedule(static)
    do k = first, last
      lo = min(lo, k);  hi = max(hi, k)
    end do
    !$omp end do nowait
  end subroutine static_share

  !> z = 0 by the calling thread alone (INIT=serial: the master first-touches everything).
  subroutine zero_grid_serial(z, m)
    integer, intent(in) :: m
    real(dp), intent(inout) :: z(m, m, m)
    integer :: k
    do k = 1, m
      z(:, :, k) = 0
    end do
  end subroutine zero_grid_serial

  !> Periodic ghost copy of the whole grid (the operators fuse the first two axes into
  !> their plane loop instead, while the plane is still in cache).
  subroutine fill_ghosts(z, m)
    integer, intent(in) :: m
    real(dp), intent(inout) :: z(m, m, m)
    integer :: j, k
    !$omp do schedule(static)
    do k = 2, m - 1
      do j = 2, m - 1
        call fill_ghosts_line(z(:, :, k), m, j)
      end do
      call fill_ghosts_plane(z(:, :, k), m)
    end do
    !$omp end do
    call fill_ghosts_axis3(z, m)
  end subroutine fill_ghosts

  !> Axis-1 ghosts of interior line j of plane zk.
  pure subroutine fill_ghosts_line(zk, m, j)
    integer, intent(in) :: m, j
    real(dp), intent(inout) :: zk(m, m)
    zk(1, j) = zk(m - 1, j)
    zk(m, j) = zk(2, j)
  end subroutine fill_ghosts_line

  !> Axis-2 ghost lines of plane zk; its axis-1 ghosts must be filled already.
  pure subroutine fill_ghosts_plane(zk, m)
    integer, intent(in) :: m
    real(dp), intent(inout) :: zk(m, m)
    zk(:, 1) = zk(:, m - 1)
    zk(:, m) = zk(:, 2)
  end subroutine fill_ghosts_plane

  !> Axis-3 ghost planes, after every interior plane has its axis-1/2 ghosts (the caller's
  !> worksharing loop ends with a barrier), so edges and corners come out right.
  subroutine fill_ghosts_axis3(z, m)
    integer, intent(in) :: m
    real(dp), intent(inout) :: z(m, m, m)
    integer :: j
    !$omp do schedule(static)
    do j = 1, m
      z(:, j, 1) = z(:, j, m - 1)
      z(:, j, m) = z(:, j, 2)
    end do
    !$omp end do
  end subroutine fill_ghosts_axis3

end module mg_grid
