! The CG matrix A = sum_i s_i x_i x_i^T (+ (rcond - shift) on the diagonal), in CSR.
!
! Each thread builds the rows of its own block (cg_team's row_block), so the pages of
! rowstr, colidx and a are first written by the thread that reads them in the timed
! sparse matrix-vector product. Every thread walks the whole stream of outer vectors
! x_i (cheap: ~2(nonzer+1) draws each) and keeps only the contributions to its own
! rows, so the matrix is the same for any thread count.
!
! Per thread: the contributions to its rows are first collected as COO triplets
! (column, value) grouped by row, then each row is sorted by column and duplicates
! are summed, and the packed rows are copied to the CSR arrays at the thread's offset.
! The triplets live alongside the CSR arrays for the whole run, as NPB keeps its own
! assembly workspace: the same resident memory.
module cg_matrix
  use, intrinsic :: iso_fortran_env, only: real64
  use npb_random, only: randlc, npb_mult
  use cg_params, only: rcond
  use cg_team, only: row_block, team_prefix
  implicit none
  private
  public :: make_matrix, entry_bound

  integer, parameter :: slot_triplets = 1, slot_nonzeros = 2
  integer, parameter :: sort_run = 16      ! rows are insertion-sorted in runs of this

contains

  !> Upper bound on triplets and nonzeros: na outer products of <= nonzer+1 entries.
  pure integer function entry_bound(na, nonzer)
    integer, intent(in) :: na, nonzer
    entry_bound = na * (nonzer + 1)**2
  end function entry_bound

  !> Build A into rowstr(na+1), colidx, a (capacity cap = entry_bound). tran is the
  !> stream state to start from; tptr(na), tcol(cap), tval(cap) are workspace.
  !> nnz returns the number of stored nonzeros.
  subroutine make_matrix(na, nonzer, shift, tran, cap, rowstr, colidx, a, tptr, tcol, tval, nnz)
    integer, intent(in) :: na, nonzer, cap
    real(real64), intent(in) :: shift, tran
    integer, intent(inout) :: rowstr(na + 1), colidx(cap), tptr(na), tcol(cap)
    real(real64), intent(inout) :: a(cap), tval(cap)
    integer, intent(out) :: nnz
    !$omp parallel default(none) &
    !$omp   shared(na, nonzer, shift, tran, cap, rowstr, colidx, a, tptr, tcol, tval, nnz)
    call build_block(na, nonzer, shift, tran, cap, rowstr, colidx, a, tptr, tcol, tval, nnz)
    !$omp end parallel
  end subroutine make_matrix

  !> One thread's share of make_matrix (contains barriers: every thread must call it).
  subroutine build_block(na, nonzer, shift, tran0, cap, rowstr, colidx, a, tptr, tcol, tval, nnz)
    integer, intent(in) :: na, nonzer, cap
    real(real64), intent(in) :: shift, tran0
    integer, intent(inout) :: rowstr(na + 1), colidx(cap), tptr(na), tcol(cap)
    real(real64), intent(inout) :: a(cap), tval(cap)
    integer, intent(inout) :: nnz
    integer :: lo, hi, nn1, i, j, k, m, m2, nzv, pos(nonzer + 1)
    integer :: ntrip, toff, ttotal, maxrow, rs, re, w, cnt, mynnz, coff, ctotal, run
    integer, allocatable :: scol(:)
    real(real64), allocatable :: sval(:)
    real(real64) :: val(nonzer + 1), tran, ratio, scale, va

    call row_block(na, lo, hi)
    nn1 = 1
    do while (nn1 < na)
      nn1 = 2 * nn1
    end do
    ratio = rcond**(1.0_real64 / na)

    ! Pass 1: how many triplets each own row receives.
    do j = lo, hi
      tptr(j) = 0
    end do
    tran = tran0
    do i = 1, na
      call outer_vector(i, na, nn1, nonzer, tran, pos, val, nzv)
      do m = 1, nzv
        j = pos(m)
        if (j >= lo .and. j <= hi) tptr(j) = tptr(j) + nzv
      end do
    end do
    ntrip = 0;  maxrow = 0
    do j = lo, hi
      maxrow = max(maxrow, tptr(j))
      ntrip = ntrip + tptr(j)
    end do
    call team_prefix(slot_triplets, ntrip, toff, ttotal)
    if (ttotal > cap) error stop 'cg: triplet workspace too small'
    ! tptr(j) := where row j's triplets start; used below as its fill pointer
    run = toff + 1
    do j = lo, hi
      k = tptr(j);  tptr(j) = run;  run = run + k
    end do

    ! Pass 2: the same stream again, storing the triplets of own rows in i order.
    tran = tran0
    scale = 1
    do i = 1, na
      call outer_vector(i, na, nn1, nonzer, tran, pos, val, nzv)
      do m = 1, nzv
        j = pos(m)
        if (j < lo .or. j > hi) cycle
        k = tptr(j)
        do m2 = 1, nzv
          va = scale * val(m) * val(m2)
          if (pos(m2) == i .and. j == i) va = va + (rcond - shift)
          tcol(k) = pos(m2);  tval(k) = va
          k = k + 1
        end do
        tptr(j) = k
      end do
      scale = scale * ratio
    end do

    ! Pass 3: sort each row by column (stable, so duplicates add up in i order), sum
    ! duplicates, and pack the rows towards the start of the thread's triplet range;
    ! rowstr(j+1) holds row j's length for now. After pass 2, row j ends at tptr(j)-1.
    allocate(scol(max(maxrow, 1)), sval(max(maxrow, 1)))
    rs = toff + 1
    w = toff
    do j = lo, hi
      re = tptr(j) - 1
      call sort_row(re - rs + 1, tcol(rs), tval(rs), scol, sval)
      cnt = 0
      do k = rs, re
        if (cnt > 0) then
          if (tcol(k) == tcol(w)) then
            tval(w) = tval(w) + tval(k)
            cycle
          end if
        end if
        w = w + 1;  cnt = cnt + 1
        tcol(w) = tcol(k);  tval(w) = tval(k)
      end do
      rowstr(j + 1) = cnt
      rs = re + 1
    end do
    mynnz = w - toff

    ! The CSR arrays: each thread writes its rows at its offset in the packed arrays.
    call team_prefix(slot_nonzeros, mynnz, coff, ctotal)
    if (lo == 1) then
      rowstr(1) = 1
      nnz = ctotal
    end if
    run = coff + 1
    do j = lo, hi
      run = run + rowstr(j + 1)
      rowstr(j + 1) = run
    end do
    do k = 1, mynnz
      colidx(coff + k) = tcol(toff + k)
      a(coff + k) = tval(toff + k)
    end do
    ! NPB assembles the matrix in place in a and colidx, with room for every contribution
    ! before duplicates are summed, so both are resident that far: so are ours (the same
    ! resident set). Nothing reads past the packed entries, whose placement this leaves be.
    !$omp do schedule(static)
    do k = ctotal + 1, ttotal
      colidx(k) = 0
      a(k) = 0
    end do
    !$omp end do nowait
  end subroutine build_block

  !> The next sparse outer vector x_i: nonzer distinct positions in 1..na with
  !> random values (value drawn first, then position), then x_i(i) = 0.5.
  subroutine outer_vector(i, na, nn1, nonzer, tran, pos, val, nzv)
    integer, intent(in) :: i, na, nn1, nonzer
    real(real64), intent(inout) :: tran
    integer, intent(out) :: pos(nonzer + 1), nzv
    real(real64), intent(out) :: val(nonzer + 1)
    real(real64) :: v, u
    integer :: j, m

    nzv = 0
    do while (nzv < nonzer)
      v = randlc(tran, npb_mult)
      u = randlc(tran, npb_mult)
      j = int(nn1 * u) + 1
      if (j > na) cycle
      if (any(pos(1:nzv) == j)) cycle
      nzv = nzv + 1
      pos(nzv) = j;  val(nzv) = v
    end do
    do m = 1, nzv
      if (pos(m) == i) then
        val(m) = 0.5_real64
        return
      end if
    end do
    nzv = nzv + 1
    pos(nzv) = i;  val(nzv) = 0.5_real64
  end subroutine outer_vector

  !> Stable sort of (c, v) by c: insertion sort of short runs, then bottom-up merges
  !> alternating between the row and the scratch arrays (sc, sv).
  subroutine sort_row(n, c, v, sc, sv)
    integer, intent(in) :: n
    integer, intent(inout) :: c(n), sc(*)
    real(real64), intent(inout) :: v(n), sv(*)
    integer :: s, e, k, m, ck, width
    real(real64) :: vk
    logical :: in_scratch

    do s = 1, n, sort_run
      e = min(s + sort_run - 1, n)
      do k = s + 1, e
        ck = c(k);  vk = v(k)
        m = k - 1
        do while (m >= s)
          if (c(m) <= ck) exit
          c(m + 1) = c(m);  v(m + 1) = v(m)
          m = m - 1
        end do
        c(m + 1) = ck;  v(m + 1) = vk
      end do
    end do
    width = sort_run
    in_scratch = .false.
    do while (width < n)
      if (in_scratch) then
        call merge_pass(n, width, sc, sv, c, v)
      else
        call merge_pass(n, width, c, v, sc, sv)
      end if
      in_scratch = .not. in_scratch
      width = 2 * width
    end do
    if (in_scratch) then
      c(1:n) = sc(1:n);  v(1:n) = sv(1:n)
    end if
  end subroutine sort_row

  !> Merge neighbouring sorted runs of length width from (c, v) into (dc, dv).
  subroutine merge_pass(n, width, c, v, dc, dv)
    integer, intent(in) :: n, width
    integer, intent(in) :: c(n)
    real(real64), intent(in) :: v(n)
    integer, intent(out) :: dc(n)
    real(real64), intent(out) :: dv(n)
    integer :: s, mid, e, i, j, k

    do s = 1, n, 2 * width
      mid = min(s + width - 1, n);  e = min(s + 2 * width - 1, n)
      i = s;  j = mid + 1;  k = s
      do while (i <= mid .and. j <= e)
        if (c(j) < c(i)) then          ! ties take the left run: stable
          dc(k) = c(j);  dv(k) = v(j);  j = j + 1
        else
          dc(k) = c(i);  dv(k) = v(i);  i = i + 1
        end if
        k = k + 1
      end do
      do while (i <= mid)
        dc(k) = c(i);  dv(k) = v(i);  i = i + 1;  k = k + 1
      end do
      do while (j <= e)
        dc(k) = c(j);  dv(k) = v(j);  j = j + 1;  k = k + 1
      end do
    end do
  end subroutine merge_pass

end module cg_matrix
