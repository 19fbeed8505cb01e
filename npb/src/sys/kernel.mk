# Shared rules for one kernel directory; the kernel Makefile sets KERNEL (cg|mg),
# SOURCES (Fortran) and C_SOURCES (C, built with make.def's CC and CFLAGS). Each
# (class, INIT) pair gets its own object directory, so objects and module files never
# mix between classes or initialisation orders.
# make.def if the user made one, else the template (a fresh checkout builds as is)
include $(firstword $(wildcard ../config/make.def) ../config/make.def.template)
CLASS ?= S
INIT ?= parallel
BINDIR ?= ../bin
BUILD := build.$(CLASS).$(INIT)
PROGRAM := $(BINDIR)/$(KERNEL).$(CLASS).x
COMMON := npb_random npb_timers npb_report
OBJS := $(BUILD)/npb_config.o $(addprefix $(BUILD)/,$(addsuffix .o,$(COMMON) $(SOURCES) $(C_SOURCES)))
export FC FLINK F_LIB F_INC FFLAGS FLINKFLAGS RAND

# bin/ holds one binary per class whatever INIT was: always relink from this
# build's objects (cheap), so switching INIT never leaves the other order's binary.
$(PROGRAM): $(OBJS) FORCE
	mkdir -p $(BINDIR)
	$(FLINK) $(FLINKFLAGS) -o $@ $(OBJS) $(F_LIB)

$(BUILD)/npb_config.f90: FORCE
	mkdir -p $(BUILD)
	../sys/mkconfig.sh $@ $(CLASS) $(INIT)

$(BUILD)/%.o: ../common/%.f90 $(BUILD)/npb_config.o
	$(FC) $(FFLAGS) $(F_INC) -J$(BUILD) -c -o $@ $<
$(BUILD)/%.o: %.f90 $(BUILD)/npb_config.o $(addprefix $(BUILD)/,$(addsuffix .o,$(COMMON)))
	$(FC) $(FFLAGS) $(F_INC) -J$(BUILD) -c -o $@ $<
$(BUILD)/%.o: %.c
	mkdir -p $(BUILD)
	$(CC) $(CFLAGS) -c -o $@ $<
$(BUILD)/npb_config.o: $(BUILD)/npb_config.f90
	$(FC) $(FFLAGS) $(F_INC) -J$(BUILD) -c -o $@ $<

.PHONY: FORCE
FORCE:
