! CG problem classes (NPB 3.4 definitions) and the run-time selection from npb_config.
module cg_params
  use, intrinsic :: iso_fortran_env, only: real64
  implicit none
  private
  public :: cg_class, class_params, rcond, cg_steps

  real(real64), parameter :: rcond = 0.1_real64
  integer, parameter :: cg_steps = 25          ! CG steps per conj_grad call

  type :: cg_class
    integer :: na, nonzer, niter
    real(real64) :: shift, zeta_ref
  end type cg_class

contains

  function class_params(cls) result(c)
    character(len=1), intent(in) :: cls
    type(cg_class) :: c
    select case (cls)
    case ('S');  c = cg_class(1400, 7, 15, 10.0_real64, 8.5971775078648_real64)
    case ('W');  c = cg_class(7000, 8, 15, 12.0_real64, 10.362595087124_real64)
    case ('A');  c = cg_class(14000, 11, 15, 20.0_real64, 17.130235054029_real64)
    case ('B');  c = cg_class(75000, 13, 75, 60.0_real64, 22.712745482631_real64)
    case ('C');  c = cg_class(150000, 15, 75, 110.0_real64, 28.973605592845_real64)
    case default
      error stop 'cg: unknown class'
    end select
  end function class_params

end module cg_params
