# One benchmark directory: BENCH.c plus ../common, built into build.CLASS/ and linked to
# $(BINDIR)/BENCH.CLASS.x. OpenMP is required, so its flag is added here, not in make.def.
include $(firstword $(wildcard ../config/make.def) ../config/make.def.template)
CLASS ?= X
BINDIR ?= ../bin
OPENMP ?= -fopenmp
BUILD := build.$(CLASS)
PROGRAM := $(BINDIR)/$(BENCH).$(CLASS).x
OBJS := $(BUILD)/$(BENCH).o $(BUILD)/mb_common.o $(BUILD)/mb_options.o $(BUILD)/mb_chase.o
HEADERS := ../common/mb_common.h ../common/mb_options.h ../common/mb_chase.h

$(PROGRAM): $(OBJS)
	mkdir -p $(BINDIR)
	$(CLINK) $(CLINKFLAGS) $(OPENMP) -o $@ $(OBJS) $(C_LIB)

$(BUILD)/%.o: %.c $(HEADERS)
	mkdir -p $(BUILD)
	$(CC) $(CFLAGS) $(OPENMP) -I../common -c -o $@ $<
$(BUILD)/%.o: ../common/%.c $(HEADERS)
	mkdir -p $(BUILD)
	$(CC) $(CFLAGS) $(OPENMP) -I../common -c -o $@ $<
