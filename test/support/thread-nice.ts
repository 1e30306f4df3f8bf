import { readFileSync } from 'node:fs';

/** The calling thread's nice value as the kernel reports it (field 19 of /proc/thread-self/stat). */
export function threadNice(): number {
  const stat = readFileSync('/proc/thread-self/stat', 'utf8');
  // fields after "pid (comm) ": state is field 3, nice field 19
  return Number(stat.slice(stat.lastIndexOf(') ') + 2).split(' ')[16]);
}
