import DataLoader from 'dataloader';

/**
 * A DataLoader shared by every request: the loads of one turn of the event loop, whichever
 * requests made them, go to `batch` together (up to `maxBatchSize` of them), so that they cost one
 * statement instead of one each. Nothing is cached: every load is read again.
 */
export function perTurn<K, V>(batch: DataLoader.BatchLoadFn<K, V>, maxBatchSize?: number): DataLoader<K, V> {
  return new DataLoader<K, V>(batch, { cache: false, batchScheduleFn: (run) => setImmediate(run), maxBatchSize });
}
