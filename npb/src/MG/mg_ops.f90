! The 27-point MG operators and the V-cycle (NPB names: resid, psinv, rprj3, interp,
! norm2u3, mg3P).
!
! Each 27-point stencil is evaluated line by line along axis 1: for every i of the
! line, the sums of the 4 face neighbours and of the 4 edge neighbours in the (j,k)
! plane are formed once in small work arrays; the stencil at i then combines those of
! i-1, i, i+1. That reuses each loaded value three times and leaves plain unit-stride
! loops that the compiler vectorises.
!
! Operators are orphaned worksharing loops over axis-3 planes with a static schedule
! (see mg_grid for why the partition matters): call them from every thread of a
! parallel region. Each ends with a barrier, so consecutive calls need no other sync.
module mg_ops
  use mg_grid
  use npb_timers, only: timer_start, timer_stop
  implicit none
  private
  public :: residual, smooth, restrict, prolongate, l2norm, vcycle, set_smoother, &
            op_timers, t_resid, t_smooth, t_restrict, t_prolong

  ! Residual operator A by neighbour class (centre, face, edge, corner). Its face
  ! coefficient is zero, so the face term is left out of residual.
  real(dp), parameter :: a0 = -8.0_dp / 3.0_dp, a2 = 1.0_dp / 6.0_dp, a3 = 1.0_dp / 12.0_dp
  ! Smoother S (centre, face, edge); its corner coefficient is zero in both variants.
  real(dp), save :: c0, c1, c2

  ! Per-operator timers (NPB's timer.flag breakdown), read by the master thread only.
  logical, save :: op_timers = .false.
  integer, parameter :: t_resid = 3, t_smooth = 4, t_restrict = 5, t_prolong = 6

contains

  !> Choose the smoother: coefficients (centre, face, edge, corner), corner must be 0.
  subroutine set_smoother(c)
    real(dp), intent(in) :: c(0:3)
    if (c(3) /= 0) error stop 'mg_ops: smoother corner coefficient must be zero'
    c0 = c(0);  c1 = c(1);  c2 = c(2)
  end subroutine set_smoother

  subroutine tstart(t)
    integer, intent(in) :: t
    if (op_timers) then
      !$omp master
      call timer_start(t)
      !$omp end master
    end if
  end subroutine tstart

  subroutine tstop(t)
    integer, intent(in) :: t
    if (op_timers) then
      !$omp master
      call timer_stop(t)
      !$omp end master
    end if
  end subroutine tstop

  !> r = v - A u, or r = r - A u in place when v is absent; then r's ghosts.
  subroutine residual(u, r, m, v)
    integer, intent(in) :: m
    real(dp), intent(in) :: u(m, m, m)
    real(dp), intent(inout) :: r(m, m, m)
    real(dp), intent(in), optional :: v(m, m, m)
    real(dp) :: face(m), edge(m)
    integer :: i, j, k

    call tstart(t_resid)
    !$omp do schedule(static)
    do k = 2, m - 1
      do j = 2, m - 1
        do i = 1, m
          face(i) = u(i, j-1, k) + u(i, j+1, k) + u(i, j, k-1) + u(i, j, k+1)
          edge(i) = u(i, j-1, k-1) + u(i, j+1, k-1) + u(i, j-1, k+1) + u(i, j+1, k+1)
        end do
        ! 12 edges = 4 in the (j,k) plane at i + the 4 faces' neighbours at i-1 and i+1;
        ! 8 corners = the (j,k)-plane edges at i-1 and i+1.
        if (present(v)) then
          do i = 2, m - 1
            r(i, j, k) = v(i, j, k) - a0 * u(i, j, k) &
                         - a2 * (edge(i) + face(i-1) + face(i+1)) - a3 * (edge(i-1) + edge(i+1))
          end do
        else
          do i = 2, m - 1
            r(i, j, k) = r(i, j, k) - a0 * u(i, j, k) &
                         - a2 * (edge(i) + face(i-1) + face(i+1)) - a3 * (edge(i-1) + edge(i+1))
          end do
        end if
      end do
    end do
    !$omp end do
    call fill_ghosts(r, m)
    call tstop(t_resid)
  end subroutine residual

  !> u = u + S r, then u's ghosts.
  subroutine smooth(r, u, m)
    integer, intent(in) :: m
    real(dp), intent(in) :: r(m, m, m)
    real(dp), intent(inout) :: u(m, m, m)
    real(dp) :: face(m), edge(m), s0, s1, s2
    integer :: i, j, k

    call tstart(t_smooth)
    s0 = c0;  s1 = c1;  s2 = c2
    !$omp do schedule(static)
    do k = 2, m - 1
      do j = 2, m - 1
        do i = 1, m
          face(i) = r(i, j-1, k) + r(i, j+1, k) + r(i, j, k-1) + r(i, j, k+1)
          edge(i) = r(i, j-1, k-1) + r(i, j+1, k-1) + r(i, j-1, k+1) + r(i, j+1, k+1)
        end do
        do i = 2, m - 1
          u(i, j, k) = u(i, j, k) + s0 * r(i, j, k) &
                       + s1 * (r(i-1, j, k) + r(i+1, j, k) + face(i)) &
                       + s2 * (edge(i) + face(i-1) + face(i+1))
        end do
      end do
    end do
    !$omp end do
    call fill_ghosts(u, m)
    call tstop(t_smooth)
  end subroutine smooth

  !> Restriction rc = P rf (fine grid mf = 2*mc - 2), then rc's ghosts. Coarse point j
  !> sits on fine point 2j-1 (indices with ghosts).
  subroutine restrict(rf, mf, rc, mc)
    integer, intent(in) :: mf, mc
    real(dp), intent(in) :: rf(mf, mf, mf)
    real(dp), intent(inout) :: rc(mc, mc, mc)
    real(dp) :: face(mf), edge(mf)
    integer :: i, i2, i3, j1, j2, j3

    call tstart(t_restrict)
    !$omp do schedule(static)
    do j3 = 2, mc - 1
      i3 = 2 * j3 - 1
      do j2 = 2, mc - 1
        i2 = 2 * j2 - 1
        do i = 2, mf
          face(i) = rf(i, i2-1, i3) + rf(i, i2+1, i3) + rf(i, i2, i3-1) + rf(i, i2, i3+1)
          edge(i) = rf(i, i2-1, i3-1) + rf(i, i2+1, i3-1) + rf(i, i2-1, i3+1) + rf(i, i2+1, i3+1)
        end do
        do j1 = 2, mc - 1
          i = 2 * j1 - 1
          rc(j1, j2, j3) = 0.5_dp * rf(i, i2, i3) &
                           + 0.25_dp * (rf(i-1, i2, i3) + rf(i+1, i2, i3) + face(i)) &
                           + 0.125_dp * (face(i-1) + face(i+1) + edge(i)) &
                           + 0.0625_dp * (edge(i-1) + edge(i+1))
        end do
      end do
    end do
    !$omp end do
    call fill_ghosts(rc, mc)
    call tstop(t_restrict)
  end subroutine restrict

  !> Prolongation uf = uf + Q uc (trilinear), over the fine ghosts too, which come out
  !> periodic because uc's ghosts are. Coarse plane i3 feeds fine planes 2*i3-1, 2*i3.
  subroutine prolongate(uc, mc, uf, mf)
    integer, intent(in) :: mc, mf
    real(dp), intent(in) :: uc(mc, mc, mc)
    real(dp), intent(inout) :: uf(mf, mf, mf)
    ! Sums of 2 coarse points along axis 2 (s2), axis 3 (s3), and of the 4 in both (s23)
    real(dp) :: s2(mc), s3(mc), s23(mc)
    integer :: i, i2, i3

    call tstart(t_prolong)
    !$omp do schedule(static)
    do i3 = 1, mc - 1
      do i2 = 1, mc - 1
        do i = 1, mc
          s2(i) = uc(i, i2, i3) + uc(i, i2+1, i3)
          s3(i) = uc(i, i2, i3) + uc(i, i2, i3+1)
          s23(i) = s2(i) + uc(i, i2, i3+1) + uc(i, i2+1, i3+1)
        end do
        do i = 1, mc - 1
          uf(2*i-1, 2*i2-1, 2*i3-1) = uf(2*i-1, 2*i2-1, 2*i3-1) + uc(i, i2, i3)
          uf(2*i,   2*i2-1, 2*i3-1) = uf(2*i,   2*i2-1, 2*i3-1) &
                                      + 0.5_dp * (uc(i, i2, i3) + uc(i+1, i2, i3))
        end do
        do i = 1, mc - 1
          uf(2*i-1, 2*i2, 2*i3-1) = uf(2*i-1, 2*i2, 2*i3-1) + 0.5_dp * s2(i)
          uf(2*i,   2*i2, 2*i3-1) = uf(2*i,   2*i2, 2*i3-1) + 0.25_dp * (s2(i) + s2(i+1))
        end do
        do i = 1, mc - 1
          uf(2*i-1, 2*i2-1, 2*i3) = uf(2*i-1, 2*i2-1, 2*i3) + 0.5_dp * s3(i)
          uf(2*i,   2*i2-1, 2*i3) = uf(2*i,   2*i2-1, 2*i3) + 0.25_dp * (s3(i) + s3(i+1))
        end do
        do i = 1, mc - 1
          uf(2*i-1, 2*i2, 2*i3) = uf(2*i-1, 2*i2, 2*i3) + 0.25_dp * s23(i)
          uf(2*i,   2*i2, 2*i3) = uf(2*i,   2*i2, 2*i3) + 0.125_dp * (s23(i) + s23(i+1))
        end do
      end do
    end do
    !$omp end do
    call tstop(t_prolong)
  end subroutine prolongate

  !> sqrt(mean of r**2 over the n**3 interior points). Opens its own parallel region:
  !> call it outside one.
  function l2norm(r, m) result(rnm2)
    integer, intent(in) :: m
    real(dp), intent(in) :: r(m, m, m)
    real(dp) :: rnm2, s
    integer :: i, j, k
    s = 0
    !$omp parallel do schedule(static) reduction(+:s)
    do k = 2, m - 1
      do j = 2, m - 1
        do i = 2, m - 1
          s = s + r(i, j, k)**2
        end do
      end do
    end do
    !$omp end parallel do
    rnm2 = sqrt(s / real(m - 2, dp)**3)
  end function l2norm

  !> One V-cycle (NPB's mg3P): improves lev(lt)%u from the residual in lev(lt)%r.
  subroutine vcycle(lev, lt, v)
    type(grid_level), intent(inout) :: lev(:)
    integer, intent(in) :: lt
    real(dp), intent(in), contiguous :: v(:,:,:)
    integer :: k

    do k = lt, 2, -1
      call restrict(lev(k)%r, lev(k)%m, lev(k-1)%r, lev(k-1)%m)
    end do
    call zero_grid(lev(1)%u, lev(1)%m)
    call smooth(lev(1)%r, lev(1)%u, lev(1)%m)
    do k = 2, lt - 1
      call zero_grid(lev(k)%u, lev(k)%m)
      call prolongate(lev(k-1)%u, lev(k-1)%m, lev(k)%u, lev(k)%m)
      call residual(lev(k)%u, lev(k)%r, lev(k)%m)
      call smooth(lev(k)%r, lev(k)%u, lev(k)%m)
    end do
    call prolongate(lev(lt-1)%u, lev(lt-1)%m, lev(lt)%u, lev(lt)%m)
    call residual(lev(lt)%u, lev(lt)%r, lev(lt)%m, v)
    call smooth(lev(lt)%r, lev(lt)%u, lev(lt)%m)
  end subroutine vcycle

end module mg_ops
