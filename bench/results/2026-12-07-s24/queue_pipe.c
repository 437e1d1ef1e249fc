#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <emmintrin.h>
#include <stdatomic.h>
#include <sys/mman.h>
static size_t B, Q, S;
static char *src, *dst, *ring;
static _Alignas(64) atomic_long head; static _Alignas(64) atomic_long tail; static atomic_int start;
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static void flush(char*p,size_t n){for(size_t i=0;i<n;i+=64)_mm_clflush(p+i);_mm_mfence();}
static char* mk(size_t n,int huge){char*p=mmap(0,n,3,MAP_PRIVATE|MAP_ANONYMOUS,-1,0);if(huge)madvise(p,n,MADV_HUGEPAGE);memset(p,1,n);return p;}
static void pin(int c){cpu_set_t s;CPU_ZERO(&s);CPU_SET(c,&s);sched_setaffinity(0,sizeof s,&s);}
static int passes;
static void *recv_th(void*a){(void)a;pin(1);
 long got=0; for(int p=0;p<passes;p++){ while(atomic_load(&start)<=p);
  for(size_t off=0;off<B;off+=S){ while(atomic_load_explicit(&head,memory_order_acquire)<=got) _mm_pause();
    memcpy(dst+off, ring+(got%(Q/S))*S, S); got++; atomic_store_explicit(&tail,got,memory_order_release);} }
 return 0;}
int main(int argc,char**argv){B=(size_t)atoi(argv[1])<<20;Q=(size_t)atoi(argv[2])<<10;S=(size_t)atoi(argv[3])<<10;passes=5;int huge=argc>4?atoi(argv[4]):1;
 src=mk(B,huge);dst=mk(B,huge);ring=mk(Q,0);
 pthread_t t;pthread_create(&t,0,recv_th,0);pin(0);
 long sent=0; double best=1e9;
 for(int p=0;p<passes;p++){flush(src,B);flush(dst,B); long base=atomic_load(&tail); (void)base;
  double t0=now(); atomic_store(&start,p+1);
  for(size_t off=0;off<B;off+=S){ while(sent-atomic_load_explicit(&tail,memory_order_acquire)>=(long)(Q/S)) _mm_pause();
    memcpy(ring+(sent%(Q/S))*S, src+off, S); sent++; atomic_store_explicit(&head,sent,memory_order_release);}
  while(atomic_load(&tail)<sent) _mm_pause();
  double s=now()-t0; if(s<best)best=s; printf("pass %d %.2f GB/s\n",p,B/s/1e9);}
 pthread_join(t,0); printf("best %.2f GB/s (B %zu MiB Q %zu KiB S %zu KiB)\n",B/best/1e9,B>>20,Q>>10,S>>10);}
