! MG: V-cycle multigrid on a periodic 3-D grid. numaplace's own implementation of the
! NPB3.4-OMP MG benchmark: same classes, verification and report, same data placement,
! and the same passes over the same grids in the same order (the same memory traffic).
program mg
  use, intrinsic :: iso_fortran_env, only: output_unit, error_unit
  use omp_lib, only: omp_get_max_threads, omp_get_num_threads
  use npb_config, only: npb_class, serial_init
  use npb_timers
  use npb_report
  use mg_grid
  use mg_ops
  use mg_rhs
  implicit none

  type :: problem
    character(len=1) :: name
    integer :: n, nit          ! grid points per axis, timed iterations
    logical :: smoother_b      ! S(b) rather than S(a)
    real(dp) :: ref            ! reference L2 norm of the final residual
  end type problem
  type(problem), parameter :: classes(5) = [ &
    problem('S', 32, 4, .false., 0.5307707005734e-04_dp), &
    problem('W', 128, 4, .false., 0.6467329375339e-05_dp), &
    problem('A', 256, 4, .false., 0.2433365309069e-05_dp), &
    problem('B', 256, 20, .true., 0.1800564401355e-05_dp), &
    problem('C', 512, 20, .true., 0.5706732285740e-06_dp)]
  real(dp), parameter :: smoother_a(0:3) = [-3.0_dp / 8, 1.0_dp / 32, -1.0_dp / 64, 0.0_dp]
  real(dp), parameter :: smoother_b(0:3) = [-3.0_dp / 17, 1.0_dp / 33, -1.0_dp / 61, 0.0_dp]
  real(dp), parameter :: tolerance = 1.0e-8_dp
  integer, parameter :: t_init = 1, t_bench = 2, t_norm = 7

  type(grid_level), allocatable :: lev(:)
  real(dp), allocatable :: v(:,:,:)
  type(problem) :: prob
  integer :: n, m, nit, lt, k, it, nthreads, icls
  logical :: have_input, verified
  real(dp) :: rnm2, t, mops

  call print_banner('MG')
  icls = findloc(classes%name, npb_class, dim=1)
  n = classes(icls)%n
  nit = classes(icls)%nit
  inquire(file='mg.input', exist=have_input)
  if (have_input) then
    write(*, '(a)') ' Reading from input file mg.input'
    call read_input(n, nit)
  else
    write(*, '(a)') ' No input file. Using compiled defaults '
  end if
  ! Verify against the class this problem is (the compiled one unless mg.input chose
  ! another size); an unknown problem runs with the compiled class's smoother.
  prob = problem('U', n, nit, classes(icls)%smoother_b, 0.0_dp)
  if (classes(icls)%n == n .and. classes(icls)%nit == nit) then
    prob = classes(icls)
  else
    do k = 1, size(classes)
      if (classes(k)%n == n .and. classes(k)%nit == nit) prob = classes(k)
    end do
  end if
  if (prob%smoother_b) then
    call set_smoother(smoother_b)
  else
    call set_smoother(smoother_a)
  end if
  lt = nint(log(real(n, dp)) / log(2.0_dp))
  m = n + 2

  write(*, '(a,i4,"x",i4,"x",i4,"  (class ",a,")")') ' Size: ', n, n, n, prob%name
  write(*, '(a,i23)') ' Iterations:', nit
  write(*, '(a,i6)') ' Number of available threads:', omp_get_max_threads()
  write(*, '(a)') ''

  op_timers = timers_enabled()
  call timer_clear(t_init)
  call timer_start(t_init)

  ! u and r on every level, v on the finest only; no element is written here, so the
  ! pages get their placement from the first write below.
  allocate(lev(lt))
  do k = 1, lt
    lev(k)%n = 2**k
    lev(k)%m = 2**k + 2
    allocate(lev(k)%u(lev(k)%m, lev(k)%m, lev(k)%m), lev(k)%r(lev(k)%m, lev(k)%m, lev(k)%m))
  end do
  allocate(v(m, m, m))
  if (serial_init) then
    do k = 1, lt
      call zero_grid_serial(lev(k)%u, lev(k)%m)
      call zero_grid_serial(lev(k)%r, lev(k)%m)
    end do
    call zero_grid_serial(v, m)
  end if

  ! First touch with the operators' partition, then an untimed warm-up V-cycle, then
  ! u = 0 and v rebuilt for the timed run. The norms whose values nobody reads are NPB's
  ! passes all the same (of v and of the first residual): the kernel moves NPB's bytes.
  !$omp parallel private(k)
  !$omp master
  nthreads = omp_get_num_threads()
  !$omp end master
  do k = lt, 1, -1
    call zero_grid(lev(k)%u, lev(k)%m)
    call zero_grid(lev(k)%r, lev(k)%m)
  end do
  call zero_grid(v, m)
  call make_rhs(v, m)
  !$omp end parallel
  rnm2 = l2norm(v, m)
  !$omp parallel
  call residual(lev(lt)%u, lev(lt)%r, m, v)
  !$omp end parallel
  rnm2 = l2norm(lev(lt)%r, m)
  !$omp parallel
  call vcycle(lev, lt, v)
  call residual(lev(lt)%u, lev(lt)%r, m, v)
  call zero_grid(lev(lt)%u, m)
  call make_rhs(v, m)
  !$omp end parallel

  call timer_stop(t_init)
  write(*, '(a,f16.3,a)') ' Initialization time:', timer_read(t_init), ' seconds'
  write(*, '(a)') ''
  do k = t_resid, t_norm
    call timer_clear(k)
  end do
  call timer_clear(t_bench)

  call timer_start(t_bench)
  ! NPB's timed section: r = v - A u and its norm, then nit times a V-cycle and r = v - A u
  !$omp parallel
  call residual(lev(lt)%u, lev(lt)%r, m, v)
  !$omp end parallel
  if (op_timers) call timer_start(t_norm)
  rnm2 = l2norm(lev(lt)%r, m)
  if (op_timers) call timer_stop(t_norm)
  !$omp parallel private(it)
  do it = 1, nit
    !$omp master
    if (it == 1 .or. it == nit .or. mod(it, 5) == 0) then
      write(*, '(2x,a,i4)') 'iter', it
      flush(output_unit)
    end if
    !$omp end master
    call vcycle(lev, lt, v)
    call residual(lev(lt)%u, lev(lt)%r, m, v)
  end do
  !$omp end parallel
  if (op_timers) call timer_start(t_norm)
  rnm2 = l2norm(lev(lt)%r, m)
  if (op_timers) call timer_stop(t_norm)
  call timer_stop(t_bench)
  t = timer_read(t_bench)

  write(*, '(a)') ''
  if (prob%name /= 'U') then
    call print_verification('L2 Norm', rnm2, prob%ref, tolerance, verified)
  else
    write(*, '(a)') ' Problem size unknown'
    write(*, '(a)') ' NO VERIFICATION PERFORMED'
    write(*, '(1x,a,t13,e20.13)') 'L2 Norm is', rnm2
    verified = .false.
  end if
  write(*, '(a)') ''
  if (op_timers) call print_timers(t)

  mops = 0
  if (t > 0) mops = 58.0_dp * nit * real(n, dp)**3 * 1.0e-6_dp / t
  call print_results('MG', n, n, n, nit, t, mops, 'floating point', verified, nthreads, &
                     omp_get_max_threads())
  call finish(verified)

contains

  !> NPB's mg.input: lt / nx ny nz / nit / debug vector (ignored). Only cubic grids of
  !> 2**lt points per axis are supported.
  subroutine read_input(n, nit)
    integer, intent(inout) :: n, nit
    integer :: unit, lt_in, nx, ny, nz, stat
    open(newunit=unit, file='mg.input', status='old', action='read', iostat=stat)
    if (stat == 0) read(unit, *, iostat=stat) lt_in
    if (stat == 0) read(unit, *, iostat=stat) nx, ny, nz
    if (stat == 0) read(unit, *, iostat=stat) nit
    if (stat /= 0) call input_error('expected lines "lt", "nx ny nz", "nit"')
    close(unit)
    if (lt_in < 2 .or. lt_in > 12 .or. nx /= 2**lt_in .or. ny /= nx .or. nz /= nx) &
      call input_error('only nx = ny = nz = 2**lt with 2 <= lt <= 12 is supported')
    if (nit < 1) call input_error('nit must be positive')
    n = nx
  end subroutine read_input

  subroutine input_error(msg)
    character(len=*), intent(in) :: msg
    write(error_unit, '(2a)') 'mg: mg.input: ', msg
    stop 1, quiet=.true.
  end subroutine input_error

  !> Per-operator breakdown of the timed section (timer.flag / NPB_TIMER_FLAG).
  subroutine print_timers(total)
    real(dp), intent(in) :: total
    character(len=8), parameter :: names(t_resid:t_norm) = &
      [character(len=8) :: 'resid', 'psinv', 'rprj3', 'interp', 'norm2u3']
    integer :: i
    write(*, '(2x,a)') 'SECTION   Time (secs)'
    do i = t_resid, t_norm
      write(*, '(2x,a8,":",f9.3,"  (",f6.2,"%)")') names(i), timer_read(i), &
        100 * timer_read(i) / max(total, tiny(total))
    end do
    write(*, '(2x,a8,":",f9.3)') 'total   ', total
  end subroutine print_timers

end program mg
