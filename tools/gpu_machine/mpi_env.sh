# Sourced on a GPU machine: unpacks .carry/suite/openmpi.tar.xz (tools/gpu_machine/pack_mpi.sh)
# into /tmp/hetrec-ompi and sets the environment mpirun needs to run from there, as root,
# on one host, with NVLink multicast left off.
mkdir -p /tmp/hetrec-ompi
tar -C /tmp/hetrec-ompi -xJf .carry/suite/openmpi.tar.xz
export OPAL_PREFIX=/tmp/hetrec-ompi/usr
export PMIX_INSTALL_PREFIX=/tmp/hetrec-ompi/usr
export PATH=/tmp/hetrec-ompi/usr/bin:$PATH
export LD_LIBRARY_PATH=/tmp/hetrec-ompi/usr/lib/x86_64-linux-gnu:/tmp/hetrec-ompi/usr/lib/x86_64-linux-gnu/openmpi/lib:${LD_LIBRARY_PATH:-}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_plm=isolated OMPI_MCA_btl=self,vader
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_pml=ob1
export NCCL_NVLS_ENABLE=0
# Ranks unbound (OpenMPI binds each of <= 2 ranks to one core by default), each with its
# share of the cores for OpenMP.
export OMPI_MCA_hwloc_base_binding_policy=none
export OMP_NUM_THREADS=$(( $(nproc) / $(nvidia-smi -L | wc -l) ))
