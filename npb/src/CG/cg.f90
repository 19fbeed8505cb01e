! NPB-compatible CG: estimate the smallest eigenvalue of a random sparse symmetric
! positive definite matrix by inverse power iteration, each step solving A z = x with
! 25 unpreconditioned conjugate-gradient steps. Problem, verification and report
! follow NPB 3.4 (see shared/docs/NPB-FACTS.md); the code is numaplace's own.
!
! Data placement: arrays are allocated without being touched. With INIT=parallel each
! thread first writes the rows it later computes on (cg_team's row partition); with
! INIT=serial the master thread writes every element of every array first.
program cg
  use, intrinsic :: iso_fortran_env, only: real64, output_unit
  use omp_lib, only: omp_get_max_threads, omp_get_num_threads
  use npb_config, only: npb_class, serial_init
  use npb_random, only: randlc, npb_seed, npb_mult
  use npb_timers
  use npb_report
  use cg_params
  use cg_team, only: team_setup
  use cg_matrix, only: make_matrix, entry_bound
  use cg_solver, only: set_vectors, power_step
  implicit none

  integer, parameter :: t_init = 1, t_bench = 2, t_steps = 3
  type(cg_class) :: c
  integer :: na, cap, nnz, it, nthreads, avail
  integer, allocatable :: rowstr(:), colidx(:), tptr(:), tcol(:)
  real(real64), allocatable :: a(:), tval(:), x(:), z(:), p(:), q(:), r(:)
  real(real64) :: tran, zeta, rnorm, xz, t, mops, per_iter
  logical :: verified, timing

  c = class_params(npb_class)
  na = c%na
  cap = entry_bound(na, c%nonzer)
  avail = omp_get_max_threads()
  nthreads = 1
  !$omp parallel default(none) shared(nthreads)
  !$omp single
  nthreads = omp_get_num_threads()
  !$omp end single
  !$omp end parallel

  call print_banner('CG')
  write(*, '(" Size: ",i11)') na
  write(*, '(" Iterations: ",i22)') c%niter
  write(*, '(" Number of available threads: ",i5)') avail
  write(*, *)
  flush(output_unit)

  timing = timers_enabled()
  call timer_clear(t_init);  call timer_clear(t_bench);  call timer_clear(t_steps)
  call timer_start(t_init)

  allocate(rowstr(na + 1), colidx(cap), a(cap), tptr(na), tcol(cap), tval(cap))
  allocate(x(na), z(na), p(na), q(na), r(na))
  if (serial_init) call touch_all_on_master()
  call team_setup()

  tran = npb_seed
  zeta = randlc(tran, npb_mult)              ! the first draw is discarded
  call make_matrix(na, c%nonzer, c%shift, tran, cap, rowstr, colidx, a, tptr, tcol, tval, nnz)
  call set_vectors(na, x, z, p, q, r, only_x=.false.)

  call timer_stop(t_init)
  write(*, '(" Initialization time = ",f15.3," seconds")') timer_read(t_init)

  ! Untimed warm-up step (touches everything once), then start again from x = 1.
  call power_step(na, rowstr, colidx, a, x, z, p, q, r, rnorm, xz)
  call set_vectors(na, x, z, p, q, r, only_x=.true.)

  write(*, '(/,"   iteration           ||r||                 zeta")')
  call timer_start(t_bench)
  do it = 1, c%niter
    if (timing) call timer_start(t_steps)
    call power_step(na, rowstr, colidx, a, x, z, p, q, r, rnorm, xz)
    if (timing) call timer_stop(t_steps)
    zeta = c%shift + 1 / xz
    write(*, '(4x,i5,7x,e20.14,f20.13)') it, rnorm, zeta
  end do
  call timer_stop(t_bench)
  t = timer_read(t_bench)

  call print_verification('Zeta', zeta, c%zeta_ref, 1.0e-10_real64, verified)
  ! floating-point operations per iteration as NPB counts them
  per_iter = 2.0_real64 * na * (3 + c%nonzer * (c%nonzer + 1) &
             + cg_steps * (5 + c%nonzer * (c%nonzer + 1)) + 3)
  mops = 0
  if (t > 0) mops = 1.0e-6_real64 * c%niter * per_iter / t
  call print_results('CG', na, 0, 0, c%niter, t, mops, 'floating point', verified, &
                     nthreads, avail)
  if (timing) call print_timers()
  call finish(verified)

contains

  !> INIT=serial: the master thread writes every element before any parallel work.
  subroutine touch_all_on_master()
    integer :: k
    do k = 1, na + 1
      rowstr(k) = 0
    end do
    do k = 1, cap
      colidx(k) = 0;  a(k) = 0;  tcol(k) = 0;  tval(k) = 0
    end do
    do k = 1, na
      tptr(k) = 0
      x(k) = 0;  z(k) = 0;  p(k) = 0;  q(k) = 0;  r(k) = 0
    end do
  end subroutine touch_all_on_master

  subroutine print_timers()
    real(real64) :: tb, ts
    tb = timer_read(t_bench);  ts = timer_read(t_steps)
    write(*, '(1x,a)') 'Detailed timers (seconds):'
    write(*, '(3x,a,f12.3)') 'init (matrix + vectors) :', timer_read(t_init)
    write(*, '(3x,a,i0)')    'stored nonzeros         : ', nnz
    write(*, '(3x,a,f12.3)') 'benchmark               :', tb
    write(*, '(3x,a,f12.3,"  (",f5.1,"%)")') 'conj_grad + norms       :', ts, &
      100 * ts / max(tb, tiny(tb))
    write(*, '(3x,a,f12.3,"  (",f5.1,"%)")') 'rest (report lines)     :', tb - ts, &
      100 * (tb - ts) / max(tb, tiny(tb))
  end subroutine print_timers

end program cg
