! The NPB report: same layout as NASA's NPB3.4-OMP output so one parser reads both,
! but the banner and the Version line say that this is numaplace's own implementation.
module npb_report
  use, intrinsic :: iso_fortran_env, only: real64, output_unit
  use npb_config
  implicit none
  private
  public :: print_banner, print_results, print_verification, finish

  character(len=*), parameter :: impl_version = 'numaplace-1'
  character(len=*), parameter :: fmt_field = '(1x,a16,"=",a25)'

contains

  subroutine print_banner(name)
    character(len=*), intent(in) :: name
    write(*,'(//,1x,a,a,a)') 'NAS Parallel Benchmarks (NPB3.4-OMP compatible; numaplace''s own', &
      ' implementation, not NASA''s code) - ', name // ' Benchmark'
    write(*,*)
  end subroutine print_banner

  subroutine field(label, value)
    character(len=*), intent(in) :: label, value
    character(len=16) :: padded
    padded = label
    write(*, fmt_field) padded, adjustr_to(value, 25)
  end subroutine field

  function adjustr_to(s, w) result(r)
    character(len=*), intent(in) :: s
    integer, intent(in) :: w
    character(len=w) :: r
    r = repeat(' ', max(0, w - len_trim(adjustl(s)))) // trim(adjustl(s))
  end function adjustr_to

  subroutine print_results(name, n1, n2, n3, niter, t, mops, optype, verified, &
                           nthreads, avail)
    character(len=*), intent(in) :: name, optype
    integer, intent(in) :: n1, n2, n3, niter, nthreads, avail
    real(real64), intent(in) :: t, mops
    logical, intent(in) :: verified
    character(len=32) :: buf

    write(*,'(//,1x,a,a)') name, ' Benchmark Completed.'
    call field('Class', npb_class)
    if (n2 == 0 .and. n3 == 0) then
      write(buf, '(i0)') n1
    else
      write(buf, '(i4,"x",i4,"x",i4)') n1, n2, n3
    end if
    call field('Size', buf)
    write(buf, '(i0)') niter;      call field('Iterations', buf)
    write(buf, '(f0.2)') t;        call field('Time in seconds', zero_lead(buf))
    write(buf, '(i0)') nthreads;   call field('Total threads', buf)
    write(buf, '(i0)') avail;      call field('Avail threads', buf)
    write(buf, '(f0.2)') mops;     call field('Mop/s total', zero_lead(buf))
    write(buf, '(f0.2)') mops / max(nthreads, 1)
    call field('Mop/s/thread', zero_lead(buf))
    call field('Operation type', optype)
    if (verified) then
      call field('Verification', 'SUCCESSFUL')
    else
      call field('Verification', 'UNSUCCESSFUL')
    end if
    call field('Version', impl_version)
    call field('Compile date', compile_date)

    write(*,'(/,1x,a)') 'Compile options:'
    call option('FC', cs_fc);           call option('FLINK', cs_flink)
    call option('F_LIB', cs_f_lib);     call option('F_INC', cs_f_inc)
    call option('FFLAGS', cs_fflags);   call option('FLINKFLAGS', cs_flinkflags)
    call option('RAND', cs_rand);       call option('INIT', cs_init)
    write(*,'(//,1x,a,/,1x,a,/)') 'numaplace NPB-compatible kernels: report problems to the', &
      'numaplace project (results are not official NAS results).'
    flush(output_unit)
  end subroutine print_results

  subroutine option(label, value)
    character(len=*), intent(in) :: label, value
    character(len=13) :: padded
    padded = label
    if (len_trim(value) == 0) then
      write(*,'(4x,a13,"= ",a)') padded, '(none)'
    else
      write(*,'(4x,a13,"= ",a)') padded, trim(value)
    end if
  end subroutine option

  !> f0.2 prints ".03"; NPB prints "0.03".
  function zero_lead(s) result(r)
    character(len=*), intent(in) :: s
    character(len=len(s)+1) :: r
    r = adjustl(s)
    if (r(1:1) == '.') r = '0' // r
  end function zero_lead

  !> The verification block NPB prints before the summary; quantity is 'Zeta' or 'L2 Norm'.
  subroutine print_verification(quantity, value, reference, tolerance, verified)
    character(len=*), intent(in) :: quantity
    real(real64), intent(in) :: value, reference, tolerance
    logical, intent(out) :: verified
    real(real64) :: err
    err = abs(value - reference) / reference
    verified = err <= tolerance
    write(*,'(1x,a)') 'Benchmark completed '
    if (verified) then
      write(*,'(1x,a)') 'VERIFICATION SUCCESSFUL '
      write(*,'(1x,a,t13,e20.13)') quantity // ' is', value
      write(*,'(1x,a,t13,e20.13)') 'Error is', err
    else
      write(*,'(1x,a)') 'VERIFICATION FAILED'
      write(*,'(1x,a,t13,e20.13)') quantity // ' is', value
      write(*,'(1x,a,t13,e20.13)') 'The correct ' // quantity // ' is', reference
      write(*,'(1x,a,t13,e20.13)') 'Error is', err
    end if
  end subroutine print_verification

  !> Unlike NASA's NPB, a failed verification ends the program with exit status 2.
  subroutine finish(verified)
    logical, intent(in) :: verified
    if (.not. verified) stop 2, quiet=.true.
  end subroutine finish

end module npb_report
