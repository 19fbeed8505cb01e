program cg
  use npb_config
  use npb_random
  use npb_report
  implicit none
  logical :: v
  call print_banner('CG')
  call print_verification('Zeta', 8.5971775078648d0, 8.5971775078648d0, 1d-10, v)
  call print_results('CG', 1400, 0, 0, 15, 0.03d0, 1970.96d0, 'floating point', v, 2, 2)
  call finish(v)
end program
