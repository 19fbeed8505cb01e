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
  public :: dp, grid_level, zero_grid, zero_grid_serial, fill_ghosts

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

  !> z = 0 by the calling thread alone (INIT=serial: the master first-touches everything).
  subroutine zero_grid_serial(z, m)
    integer, intent(in) :: m
    real(dp), intent(inout) :: z(m, m, m)
    integer :: k
    do k = 1, m
      z(:, :, k) = 0
    end do
  end subroutine zero_grid_serial

  !> Periodic ghost copy (NPB's comm3), a pass of its own after every operator that
  !> writes a grid: axis 1 over all interior planes, then axis 2 over them, then the two
  !> axis-3 ghost planes, so that edges and corners come out right.
  subroutine fill_ghosts(z, m)
    integer, intent(in) :: m
    real(dp), intent(inout) :: z(m, m, m)
    integer :: j, k
    !$omp do schedule(static)
    do k = 2, m - 1
      do j = 2, m - 1
        z(1, j, k) = z(m - 1, j, k)
        z(m, j, k) = z(2, j, k)
      end do
    end do
    ! nowait: the axis-2 loop splits the planes as the axis-1 loop does, so each thread
    ! reads only the axis-1 ghosts it wrote itself
    !$omp end do nowait
    !$omp do schedule(static)
    do k = 2, m - 1
      z(:, 1, k) = z(:, m - 1, k)
      z(:, m, k) = z(:, 2, k)
    end do
    !$omp end do
    !$omp do schedule(static)
    do j = 1, m
      z(:, j, 1) = z(:, j, m - 1)
      z(:, j, m) = z(:, j, 2)
    end do
    !$omp end do
  end subroutine fill_ghosts

end module mg_grid
